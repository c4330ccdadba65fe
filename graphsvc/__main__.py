import sys

from graphsvc.surfaces.cli import main

sys.exit(main())
