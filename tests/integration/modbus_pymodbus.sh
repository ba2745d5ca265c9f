#!/usr/bin/env bash
# Integration: the modbus backend against pymodbus (Debian python3-pymodbus,
# a server we did not write) on loopback. $1 = build dir. Exit 77 (skip) only
# when pymodbus is not installed or the backend is compiled out.
set -euo pipefail
build=${1:?usage: modbus_pymodbus.sh BUILD_DIR}
driver="$build/tests/modbus_driver"
# The python3 on PATH may be a pyenv one that cannot see Debian's packages.
py=/usr/bin/python3
if [ ! -x "$py" ] || ! "$py" -c 'import pymodbus.server' 2>/dev/null; then
	echo "SKIP: /usr/bin/python3 cannot import pymodbus.server;" \
	     "install python3-pymodbus python3-serial-asyncio (tools/install-deps)"
	exit 77
fi
if [ ! -x "$driver" ]; then
	echo "SKIP: $driver not built (GOVD_WITH_MODBUS=OFF?)"
	exit 77
fi
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "pymodbus $("$py" -c 'import pymodbus; print(pymodbus.__version__)') on 127.0.0.1:$port"
# The driver starts, stops and restarts the server itself; timeout bounds it all.
exec timeout 120 "$driver" "$port" "$py" tests/integration/pymodbus_server.py
