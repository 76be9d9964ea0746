"""The Questions API."""
