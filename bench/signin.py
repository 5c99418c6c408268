"""Signs in to a development-mode Gatehouse through its built-in provider; prints the session cookie value.

    python3 bench/signin.py GATEWAY PASSWORD [ACCOUNT] [--register USERNAME PHONE]

With --register the member then goes through the whole upgrade flow (phone, the code from the development inbox,
username, PIN, profile) and is at level `registered`.
"""

import re
import sys
from urllib.parse import parse_qs, urlparse

import requests

arguments = sys.argv[1:]
register = None
if "--register" in arguments:
    at = arguments.index("--register")
    register = arguments[at + 1 : at + 3]
    del arguments[at : at + 3]
gateway, password = arguments[0], arguments[1]
account = arguments[2] if len(arguments) > 2 else "alice"

http = requests.Session()
start = http.get(gateway + "/signin/start", allow_redirects=False)
authorize = start.headers["Location"]
form = {key: values[0] for key, values in parse_qs(urlparse(authorize).query).items()}
form.update(account=account, password=password, action="continue")
decision = http.post(gateway + "/dev-idp/authorize", data=form, allow_redirects=False)
http.get(decision.headers["Location"], allow_redirects=False)


def step(path, fields, expect):
    csrf = re.search(r'name="csrf" value="([^"]+)"', http.get(gateway + "/").text).group(1)
    reply = http.post(gateway + path, data={"csrf": csrf, **fields}, headers={"Origin": gateway}, allow_redirects=False)
    location = reply.headers.get("Location", "")
    if not location.startswith(expect):
        sys.exit(f"signin: {path} answered {reply.status_code} {location!r}, expected {expect}")


if register:
    username, phone = register
    http.get(gateway + "/upgrade?from=portal", allow_redirects=False)
    step("/upgrade/phone", {"phone": phone}, "/upgrade/code")
    code = re.search(r'class="code">(\d+)', http.get(gateway + "/dev/inbox").text).group(1)
    step("/upgrade/code", {"code": code}, "/upgrade/username")
    step("/upgrade/username", {"username": username}, "/upgrade/pin")
    step("/upgrade/pin", {"pin": "2580", "pin_confirmation": "2580"}, "/upgrade/profile")
    step("/upgrade/profile", {"display_name": username, "discoverability": "nobody"}, "/upgrade/done")
print(http.cookies["gatehouse_session"])
