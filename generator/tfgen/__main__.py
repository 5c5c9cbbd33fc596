"""`python -m tfgen` runs the command line, as the installed `tfgen` script does."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="tfgen")
