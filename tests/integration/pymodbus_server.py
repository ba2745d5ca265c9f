#!/usr/bin/python3
"""A Modbus TCP meter for the integration test, built on pymodbus (Debian's
python3-pymodbus 3.0.x): a server we did not write, speaking to libmodbus.

It serves an Eastron SDM630-shaped input-register map (float32, ABCD) with
known values, loopback only. Modes:
  normal  values as given
  slow    every request answered after --delay seconds (beyond the client's timeout)
  nan     total system power reads as a float32 NaN (garbage), the rest normal
It runs until killed (SIGTERM) or --max-s seconds pass, so it always stops by itself.
"""
import argparse
import asyncio
import logging
import struct
import sys
import time

from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                ModbusSlaveContext)
from pymodbus.server import StartAsyncTcpServer

# Protocol addresses, from configs/meters/eastron-sdm630.yaml.
VOLTAGE, CURRENT_SUM, POWER, FREQUENCY, IMPORT_KWH = 0x0000, 0x0030, 0x0034, 0x0046, 0x0048


def words(value):
    """float32 big-endian (ABCD) as two registers."""
    hi, lo = struct.unpack(">HH", struct.pack(">f", value))
    return [hi, lo]


class SlowBlock(ModbusSequentialDataBlock):
    """Answers late: blocks the server loop, as a stuck gateway would."""

    def __init__(self, address, values, delay_s):
        super().__init__(address, values)
        self.delay_s = delay_s

    def getValues(self, address, count=1):
        time.sleep(self.delay_s)
        return super().getValues(address, count)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mode", choices=["normal", "slow", "nan"], default="normal")
    ap.add_argument("--power", type=float, default=1234.5)
    ap.add_argument("--energy", type=float, default=42.25)
    ap.add_argument("--voltage", type=float, default=230.5)
    ap.add_argument("--current", type=float, default=5.375)
    ap.add_argument("--freq", type=float, default=50.0)
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--max-s", type=float, default=120.0)
    a = ap.parse_args()

    regs = [0] * 0x200
    power = float("nan") if a.mode == "nan" else a.power
    for addr, v in ((VOLTAGE, a.voltage), (CURRENT_SUM, a.current), (POWER, power),
                    (FREQUENCY, a.freq), (IMPORT_KWH, a.energy)):
        regs[addr:addr + 2] = words(v)
    if a.mode == "slow":
        block = SlowBlock(0, regs, a.delay)
    else:
        block = ModbusSequentialDataBlock(0, regs)
    # zero_mode: request address N reads block index N (no +1 quirk).
    slave = ModbusSlaveContext(ir=block, hr=ModbusSequentialDataBlock(0, [0] * 16),
                               zero_mode=True)
    ctx = ModbusServerContext(slaves=slave, single=True)
    server = await StartAsyncTcpServer(context=ctx, address=("127.0.0.1", a.port),
                                       defer_start=True, allow_reuse_address=True)
    print(f"pymodbus_server: mode={a.mode} port={a.port}", flush=True)
    try:
        await asyncio.wait_for(server.serve_forever(), timeout=a.max_s)
    except asyncio.TimeoutError:
        pass


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    # pymodbus logs every client disconnect as an ERROR ("Handler ... has been
    # canceled"); the driver drops connections on purpose.
    logging.getLogger("pymodbus.server.async_io").setLevel(logging.CRITICAL)
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
