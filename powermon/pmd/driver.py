"""The PMD-USB host driver over pyserial: stop any stream a previous program left running, flush, check the
welcome string and ID, read the config (its ADC offsets are added to every code), then continuous TX with a
4-byte timestamp and all eight channels."""

from __future__ import annotations

import time

from archline.powermon.errors import DeviceError
from archline.powermon.pmd.protocol import (
    AMP_PER_CODE,
    CMD_ID,
    CMD_READ_CONFIG,
    CMD_WELCOME,
    PRODUCT,
    START,
    STOP,
    VENDOR,
    VOLT_PER_CODE,
    WELCOME,
    Decoder,
    PmdConfig,
)
from archline.powermon.stream.driver import StreamDriver, register_handler

register_handler("archline.powermon.pmd")


class PmdUsb(StreamDriver):
    label = "PMD-USB"
    kind = "pmd"
    baudrate = 115200

    firmware = 0
    config: PmdConfig
    #: the decoder's frame 0 is the first frame after the start command (the stream is stopped and flushed in the
    #: handshake); its sample may predate the command's arrival by one ADC round at most (about 29 µs per the
    #: reference; 100 µs taken), which the clock map's lower bound allows for
    start_lead_s = 1e-4

    def default_config(self) -> PmdConfig:
        return PmdConfig()

    def config_from_raw(self, raw: bytes) -> PmdConfig:
        return PmdConfig.unpack(raw)

    def new_decoder(self) -> Decoder:
        return Decoder(self.config, self.rate_hz)

    def handshake(self) -> None:
        self.write(STOP)
        self.drain(quiet_s=0.05, limit_s=1.0)
        self._ser.reset_input_buffer()
        self.write(bytes([CMD_WELCOME]))
        got = self.read_exact(len(WELCOME))
        if got != WELCOME:
            raise DeviceError(f"{self.port} answers {got!r} to the welcome command: not a PMD-USB")
        self.write(bytes([CMD_ID]))
        vendor, product, self.firmware = self.read_exact(3)
        if (vendor, product) != (VENDOR, PRODUCT):
            raise DeviceError(f"{self.port}: ID {vendor:#04x}/{product:#04x} is not a PMD-USB's (0xee/0x0a)")
        self.version = f"PMD-USB firmware {self.firmware}"
        self.write(bytes([CMD_READ_CONFIG]))
        self.config_raw = self.read_exact(PmdConfig.size(self.firmware))
        self.config = self.config_from_raw(self.config_raw)
        self.decoder = self.new_decoder()

    def start_stream(self) -> None:
        self.write(START)

    def stop_stream(self) -> None:
        self.write(STOP)
        time.sleep(0.01)
        self.drain(quiet_s=0.05, limit_s=1.0)        # frames already in the buffers still arrive
        self._ser.reset_input_buffer()

    def lsb(self, pair: int) -> tuple[float, float]:
        return VOLT_PER_CODE, AMP_PER_CODE
