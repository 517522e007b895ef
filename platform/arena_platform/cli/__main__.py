"""`python -m arena_platform.cli`: the same as the `arena` command."""

import sys

from arena_platform.cli import main

if __name__ == "__main__":  # a spawned child process (the sweeper) imports this module again
    sys.exit(main())
