"""The core's subcommands of `qvr` (check, diagram, run, fmt, explain); `qvr_cli` assembles them."""
