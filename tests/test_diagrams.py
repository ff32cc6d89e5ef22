"""Step diagrams: drawn from observations alone, well-formed, and they render."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers import run_steps

from conformance.cli.main import main
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.reports.diagrams import Frame, step_svg, strip_svg
from conformance.reports.diagrams.messages import arrows, parse
from conformance.reports.diagrams.story import fixture_frames
from reference_impl import initial_state, observe

NS = {"s": "http://www.w3.org/2000/svg"}
DATA_LOSS = FIXTURES_DIR / "seeds" / "03a-data-loss-hw-truncation.yaml"


def texts(svg_text: str) -> list[str]:
    root = ET.fromstring(svg_text)
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


def text_fill(svg_text: str, content: str) -> list[str | None]:
    root = ET.fromstring(svg_text)
    return [t.get("fill") for t in root.iter("{http://www.w3.org/2000/svg}text") if "".join(t.itertext()) == content]


def data_loss_frames() -> list[Frame]:
    fixtures, problems = load_fixtures([DATA_LOSS])
    assert not problems
    return fixture_frames(fixtures[0])


@pytest.mark.parametrize(
    ("line", "src", "dst", "name", "details"),
    [
        ("B->A Fetch(epoch=0 offset=1) parked until 1000", "B", "A", "Fetch",
         ("epoch=0 offset=1", "parked until 1000")),
        ("C->B FetchResponse(epoch=2 offset=2 diverging=(0,1) hw=0)", "C", "B", "FetchResponse",
         ("epoch=2 offset=2", "diverging=(0,1) hw=0")),
        ("controller->A LeaderAndIsr(leader=B epoch=1 isr=[A,B,C])", "controller", "A", "LeaderAndIsr",
         ("leader=B epoch=1", "isr=[A,B,C]")),
        ("producer->A Produce(id=p1 acks=all) waits for HW>=1 until 30500", "producer", "A", "Produce",
         ("id=p1 acks=all", "waits for HW>=1 until 30500")),
    ],
)  # fmt: skip
def test_in_flight_lines_read_back_as_arrows(
    line: str, src: str, dst: str, name: str, details: tuple[str, ...]
) -> None:
    arrow = parse("fetch_responses", line)
    assert arrow is not None
    assert (arrow.src, arrow.dst, arrow.name, arrow.details) == (src, dst, name, details)


def test_unreadable_message_lines_are_kept_as_text() -> None:
    found, unread = arrows({"fetch_responses": ["something else entirely"], "parked_fetches": []})
    assert found == [] and unread == ["something else entirely"]
    svg_text = step_svg(Frame({"in_flight": {"fetch_responses": ["something else entirely"]}}))
    assert "in flight: something else entirely" in texts(svg_text)


def test_a_step_draws_logs_marks_roles_isr_and_messages() -> None:
    # the state of seed 001 §3.1 before B restarts: both logs [m0, m1], A HW 2, B HW 1,
    # B's FETCH(offset 2) parked at A
    frame = data_loss_frames()[6]
    svg_text = step_svg(frame)
    words = texts(svg_text)
    assert words.count("m0") == 2 and words.count("m1") == 2
    assert words.count("e0") == 4
    assert {"HW=2", "HW=1", "LEO=2", "★ leader", "follower"} <= set(words)
    assert words.count("in ISR") == 2
    assert "remote LEO: B=2" in words
    assert "Fetch" in words and "parked until 500" in words
    assert "leader A · epoch 0 · ISR [A, B] · clock 0 ms" in words


def test_crash_elect_and_the_lost_record() -> None:
    frames = data_loss_frames()
    crashed = texts(step_svg(frames[9]))  # after: crash A
    assert "✕ crashed" in crashed and "checkpoint HW: 2" in crashed
    elected = texts(step_svg(frames[10]))  # after: elect
    assert "not in ISR" in elected and "ISR [B]" in " ".join(elected)
    last = texts(step_svg(frames[-1]))  # B's log is [m0, m2@1]; m1 only on the halted A
    assert "m2" in last and "e1" in last
    assert "consumer: read from offset 0: [m0@0]" in last


def test_partial_observation_draws_what_is_reported() -> None:
    observation: dict[str, Any] = {"replicas": {"A": {"leo": 2, "hw": 1}, "B": {"hw": 0}}}
    words = texts(step_svg(Frame(observation)))
    assert words.count("?") == 2  # A's two records, values not reported
    assert "HW=1" in words and "LEO=2" in words and "HW=0" in words
    assert "LEO" not in " ".join(w for w in words if w.startswith("LEO=0"))


def test_highlighted_fields_are_red() -> None:
    state = run_steps(initial_state_config(), {"kind": "produce", "values": ["m0"], "acks": 1, "id": "p1"})
    frame = Frame(observe(state), highlight=frozenset({"replicas.B.leo", "isr"}))
    svg_text = step_svg(frame)
    assert text_fill(svg_text, "LEO=0") == ["#d00000"]  # B's
    assert text_fill(svg_text, "LEO=1") == ["#c55a11"]  # A's, not highlighted
    assert 'fill="#d00000" font-weight="bold"> · ISR [A, B]' in svg_text


def initial_state_config() -> Any:
    fixtures, _ = load_fixtures([DATA_LOSS])
    return fixtures[0].config


def test_strip_lines_frames_up_and_output_is_deterministic() -> None:
    frames = data_loss_frames()
    a, b = strip_svg(frames, "t"), strip_svg(frames, "t")
    assert a == b
    root = ET.fromstring(a)
    assert len(root.findall("s:g", NS)) == len(frames)
    widths = {float(r.get("width", 0)) for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("rx") == "6"}
    assert len(widths) == 1  # every replica row of every frame equally wide
    with pytest.raises(ValueError):
        strip_svg([])


def test_svg_renders_to_png() -> None:
    try:
        import cairosvg  # type: ignore[import-untyped]
        from PIL import Image as image_mod
    except (ImportError, OSError) as exc:  # OSError: cairosvg installed but the libcairo library missing
        pytest.skip(f"no SVG to PNG converter here (cairosvg with libcairo, and Pillow): {exc}")
    svg_text = step_svg(data_loss_frames()[6])
    root = ET.fromstring(svg_text)
    png = cairosvg.svg2png(bytestring=svg_text.encode())
    image = image_mod.open(io.BytesIO(png)).convert("RGB")
    assert image.size == (int(root.get("width", 0)), int(root.get("height", 0)))
    colors = image.getcolors(maxcolors=1 << 20)
    assert colors is not None
    by_color = {rgb: n for n, rgb in colors}
    total = image.size[0] * image.size[1]
    # the committed cells (m0 on both replicas) are solid blue, a visible share of the picture
    committed = sum(n for rgb, n in by_color.items() if _near(rgb, (0x2F, 0x75, 0xB5)))
    assert committed > 0.005 * total
    assert by_color.get((255, 255, 255), 0) < 0.9 * total  # not a blank page


def _near(rgb: tuple[int, int, int], target: tuple[int, int, int], tolerance: int = 12) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(rgb, target, strict=True))


def test_explain_writes_svg_and_html_from_a_fixture_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg_out, html_out = tmp_path / "x.svg", tmp_path / "x.html"
    assert main(["explain", str(DATA_LOSS), "--svg", str(svg_out), "--html", str(html_out)]) == 0
    ET.fromstring(svg_out.read_text(encoding="utf-8"))
    page = html_out.read_text(encoding="utf-8")
    assert page.count("<svg") == len(data_loss_frames())
    assert "<table>" in page and "TRUNC-HW-1" in page
    step8 = page.split('id="hw-truncation-step-8"')[1].split('class="step"')[0]  # restart B: truncates to HW 1
    assert "step 8: restart replica=B" in step8
    assert "replicas.B.log *" in step8 and "rules fired: RESTART-1" in step8
    assert f"wrote {svg_out}" in capsys.readouterr().err


def test_explain_svg_for_a_fixture_with_several_generations(tmp_path: Path) -> None:
    assert main(["explain", "seed-01-normal-round", "--svg", str(tmp_path / "n.svg")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "n-diverging-epoch.svg",
        "n-hw-truncation.svg",
        "n-leader-epoch.svg",
    ]


def test_explain_missing_fixture_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(tmp_path / "nope.yaml"), "--html", str(tmp_path / "x.html")]) == 2
    assert "nope.yaml: no such file" in capsys.readouterr().err


def test_initial_frame_is_the_reference_initial_state() -> None:
    frames = data_loss_frames()
    fixtures, _ = load_fixtures([DATA_LOSS])
    assert frames[0].observation == observe(initial_state(fixtures[0].config))


def test_records_a_step_removes_stay_visible_struck_out() -> None:
    frames = data_loss_frames()
    restart_b = frames[8]  # step 8: B restarts and truncates to its checkpointed HW 1, losing m1
    assert restart_b.title == "step 8: restart replica=B" and restart_b.previous == frames[7].observation
    words = texts(step_svg(restart_b))
    assert words.count("removed") == 1 and words.count("m1") == 2  # A's m1, and B's removed m1
    assert "removed" not in texts(step_svg(frames[7]))  # the crash removed nothing
