"""`python -m headcast.app` = the `headcast` command."""

from headcast.app.commands.cli import main

raise SystemExit(main())
