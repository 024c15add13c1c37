"""``python -m specbound.cli`` (the same as ``specbound``)."""

from . import main

if __name__ == "__main__":
    main()
