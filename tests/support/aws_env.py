"""An AWS environment for a test: botocore's credential chain and region see
only what the test sets (no ~/.aws, no instance metadata probe), and
fastkc.auth.msk_iam's per-environment cache starts empty."""
import os

#: every variable botocore's chain and region lookup read, cleared first
_AWS_VARS = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
             "AWS_SECURITY_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_DEFAULT_REGION",
             "AWS_REGION", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_WEB_IDENTITY_TOKEN_FILE",
             "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
             "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_EC2_METADATA_DISABLED", "BOTO_CONFIG")


def isolate(monkeypatch, tmp_path, access_key=None, secret_key=None, token=None, region=None):
    from fastkc.auth import msk_iam

    for name in _AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    missing = os.path.join(str(tmp_path), "no-such-aws-file")
    monkeypatch.setenv("AWS_CONFIG_FILE", missing)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", missing)
    monkeypatch.setenv("BOTO_CONFIG", missing)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no 1 s probe of 169.254.169.254
    for name, value in (("AWS_ACCESS_KEY_ID", access_key), ("AWS_SECRET_ACCESS_KEY", secret_key),
                        ("AWS_SESSION_TOKEN", token), ("AWS_DEFAULT_REGION", region)):
        if value is not None:
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(msk_iam, "_sources", {})
