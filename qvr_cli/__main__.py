"""`python -m qvr_cli`: the `qvr` command line."""

import sys

from qvr_cli.main import main

sys.exit(main())
