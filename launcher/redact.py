"""Keep secrets (the API key, S3 credentials) out of everything the launcher prints or stores."""

from __future__ import annotations

import os

_SECRET_VARIABLES = ("RUNCRATE_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID")


class Redactor:
    def __init__(self, secrets: list[str] | None = None):
        if secrets is None:
            secrets = [os.environ.get(name, "") for name in _SECRET_VARIABLES]
        # Also as stripped and as escaped (repr) text, the forms error messages quote them in.
        forms = {form for s in secrets for form in (s, s.strip(), repr(s)[1:-1])}
        # Longest first, so a secret containing another is replaced whole; short values are not secrets.
        self.secrets = sorted({s for s in forms if len(s) >= 8}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text
