"""The core's subcommands of `qvr` (check, diagram, run, fmt); `qvr_cli` assembles them."""
