"""Where the tests find the Wikipedia sample dump: $FLAMESPARK_WIKI_SAMPLE, or shared/data beside the checkout."""
import os
from pathlib import Path

WIKI_SAMPLE = Path(os.environ.get("FLAMESPARK_WIKI_SAMPLE")
                   or Path(__file__).resolve().parents[2] / "shared" / "data" / "enwiki-sample.xml.bz2")
