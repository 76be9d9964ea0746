"""The hosted public help center (issue 16): server-rendered pages under ``/hc/{org}``."""
