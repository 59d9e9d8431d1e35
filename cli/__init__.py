"""The ``meridian`` command line tool."""
