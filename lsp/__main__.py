"""`python -m dragon_lsp`: run the language server (stdio by default)."""

import sys

from dragon_lsp.server import main

sys.exit(main())
