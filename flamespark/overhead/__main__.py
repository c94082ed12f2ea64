"""`python -m flamespark.overhead`."""
import sys

from flamespark.overhead.cli import main

sys.exit(main())
