"""One canonical one-line rendering per message and per replica.

Used by observations, failure diffs, ``explain`` tables and reports alike, so every
place that shows a message shows it the same way (etcd raft's ``DescribeMessage``).
"""

from __future__ import annotations

from .log import render as render_log
from .messages import AlterPartition, EpochResponse, FetchResponse, LeaderAndIsr, ParkedFetch, PendingProduce
from .state import Replica

Message = FetchResponse | ParkedFetch | EpochResponse | LeaderAndIsr | PendingProduce | AlterPartition


def describe_message(message: Message) -> str:
    if isinstance(message, FetchResponse):
        head = f"{message.src}->{message.dst} FetchResponse(epoch={message.request_epoch} offset={message.fetch_offset}"
        if message.error:
            extra = f" error={message.error}"
            if message.leader_leo is not None:
                extra += f" leader_leo={message.leader_leo}"
            return head + extra + ")"
        if message.diverging_epoch is not None:
            epoch, end = message.diverging_epoch
            return head + f" diverging=({epoch},{end}) hw={message.hw})"
        records = ",".join(render_log(message.records))
        return head + f" records=[{records}] hw={message.hw})"
    if isinstance(message, ParkedFetch):
        return (
            f"{message.follower}->{message.leader} Fetch(epoch={message.request_epoch} "
            f"offset={message.fetch_offset}) parked until {message.deadline_ms}"
        )
    if isinstance(message, EpochResponse):
        head = f"{message.src}->{message.dst} OffsetsForLeaderEpochResponse(requested={message.requested_epoch}"
        if message.error:
            return head + f" error={message.error})"
        return head + f" epoch={message.epoch} end_offset={message.end_offset})"
    if isinstance(message, LeaderAndIsr):
        isr = ",".join(message.isr)
        leader = "none" if message.leader is None else message.leader
        return f"controller->{message.dst} LeaderAndIsr(leader={leader} epoch={message.epoch} isr=[{isr}])"
    if isinstance(message, AlterPartition):
        isr = ",".join(message.isr)
        return (
            f"{message.leader}->controller AlterPartition(epoch={message.leader_epoch} "
            f"partition_epoch={message.partition_epoch} isr=[{isr}])"
        )
    return (
        f"producer->{message.leader} Produce(id={message.id} acks=all) waits for HW>={message.required_offset}"
        f" until {message.deadline_ms}"
    )


def describe_replica(replica: Replica) -> str:
    if not replica.online:
        return f"{replica.id}: offline leo={replica.leo} checkpoint_hw={replica.checkpoint_hw}"
    records = replica.log.rendered(replica.log_start)
    start = f" log_start={replica.log_start}" if replica.log_start else ""
    text = (
        f"{replica.id}: {replica.role.value} epoch={replica.leader_epoch} "
        f"leo={replica.leo} hw={replica.hw}{start} log=[{','.join(records)}]"
    )
    if replica.epoch_cache:
        text += " cache=" + ",".join(f"({e},{o})" for e, o in replica.epoch_cache)
    if replica.progress:
        text += " remote_leo={" + ",".join(f"{p.replica}:{p.remote_leo}" for p in replica.progress) + "}"
    return text
