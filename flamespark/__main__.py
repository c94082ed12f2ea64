"""`python -m flamespark`: the `flamespark` command."""
import sys

from flamespark.cli import main

sys.exit(main())
