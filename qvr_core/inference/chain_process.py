"""The entry point of a chain process: `python -P -m qvr_core.inference.chain_process`.

See `qvr_core.inference.chains` (`run_chains` starts these, `child_main` is
what they run).
"""

import os
import sys

from qvr_core.inference.chains import child_main

if __name__ == "__main__":
    code = child_main()
    sys.stderr.flush()
    os._exit(code)  # the stdin watcher thread may still wait; nothing else is left to do
