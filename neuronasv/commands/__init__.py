"""One module per CLI sub-command; each exposes ``add_parser(subparsers)``.

Commands only parse arguments, call the library and print; logic lives in the stages.
"""
