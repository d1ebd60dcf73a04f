"""`python -m turnstore`: the `turnstore` command, where its script is not on the PATH."""

import sys

from .cli import main

sys.exit(main())
