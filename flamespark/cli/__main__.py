"""`python -m flamespark.cli`: the `flamespark` command."""
import sys

from flamespark.cli import main

sys.exit(main())
