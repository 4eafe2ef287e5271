"""Signs one S3 request with the botocore that Debian's awscli carries
(awscli 2 ships its own), for s3_fixture.bats to compare with the program's signer.

Usage: python3 botocore_sign.py METHOD ENDPOINT BUCKET KEY AMZDATE REGION BODY [NAME=VALUE]...

The path /BUCKET/KEY is encoded here (urllib's quote, keeping / and ~) and
the query parameters given decoded, so that botocore encodes them itself.
BODY is a file or "-" (none). The credentials come from AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN. Prints the headers botocore
adds, "name: value", in the order s3_sign prints them.
"""

import datetime
import os
import sys
from unittest import mock
from urllib.parse import quote

import awscli  # noqa: F401 (awscli 2 makes its own botocore importable as "botocore")
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def main():
    method, endpoint, bucket, key, when, region, body_file = sys.argv[1:8]
    params = dict(arg.partition("=")[::2] for arg in sys.argv[8:])
    body = b""
    if body_file != "-":
        with open(body_file, "rb") as f:
            body = f.read()
    url = endpoint + quote("/" + bucket + ("/" + key if key else ""), safe="/~")
    request = AWSRequest(method=method, url=url, params=params, data=body)
    credentials = Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"],
                              os.environ.get("AWS_SESSION_TOKEN") or None)

    class Then(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return cls.strptime(when, "%Y%m%dT%H%M%SZ")

    with mock.patch("botocore.auth.datetime.datetime", Then):
        S3SigV4Auth(credentials, "s3", region).add_auth(request)
    for name in ("x-amz-date", "x-amz-content-sha256", "x-amz-security-token", "Authorization"):
        if name in request.headers:
            print("%s: %s" % (name, request.headers[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
