"""`python -m deepum ...`: the same command line as `deepum ...`."""
import sys

from .cli import main

sys.exit(main())
