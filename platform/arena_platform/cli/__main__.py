"""`python -m arena_platform.cli`: the same as the `arena` command."""

import sys

from arena_platform.cli import main

sys.exit(main())
