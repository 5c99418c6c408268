"""Signs in to a development-mode Gatehouse through its built-in provider; prints the session cookie value."""

import re
import sys
from urllib.parse import parse_qs, urlparse

import requests

gateway, password = sys.argv[1], sys.argv[2]
http = requests.Session()
start = http.get(gateway + "/signin/start", allow_redirects=False)
authorize = start.headers["Location"]
form = {key: values[0] for key, values in parse_qs(urlparse(authorize).query).items()}
form.update(account="alice", password=password, action="continue")
decision = http.post(gateway + "/dev-idp/authorize", data=form, allow_redirects=False)
http.get(decision.headers["Location"], allow_redirects=False)
print(http.cookies["gatehouse_session"])
