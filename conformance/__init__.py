"""kconform harness: fixtures, adapters, runner, reports and the command line."""
