"""Signs in to a development-mode Gatehouse through its built-in provider; prints the session cookie value.

    python3 bench/signin.py GATEWAY PASSWORD [ACCOUNT] [--register USERNAME PHONE]

With --register the member then goes through the whole upgrade flow (phone, the code from the development inbox,
username, PIN, profile) and is at level `registered`.
"""

import sys

from gatehouse import sign_in

arguments = sys.argv[1:]
register = None
if "--register" in arguments:
    at = arguments.index("--register")
    register = tuple(arguments[at + 1 : at + 3])
    del arguments[at : at + 3]
origin, password = arguments[0], arguments[1]
account = arguments[2] if len(arguments) > 2 else "alice"
print(sign_in(origin, password, account, register).cookies["gatehouse_session"])
