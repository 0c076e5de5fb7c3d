"""The core's subcommands of `qvr` (check, diagram, run, data, fmt, explain); `qvr_cli`
assembles them."""
