"""`python -m flamespark.tools.overhead`."""
import sys

from flamespark.tools.overhead.cli import main

sys.exit(main())
