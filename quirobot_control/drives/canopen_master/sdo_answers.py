"""SDO answers matched to their request: a late answer to an earlier request is dropped, not taken.

canopen's SDO client takes the next frame on the server's SDO channel as the answer to the request
it just sent. An answer that arrives late (after RESPONSE_TIMEOUT: its request timed out, or was
sent again by a retry) then answers the next request instead: a statusword read got the
acknowledgement of an earlier controlword write ("Unexpected response 0x60") and the drive was
reported as failing to disable (seen on a loaded CI host, the simulated drives starved for more
than the 1 s timeout). CiA 301 says which answers a request can have: an initiate request's answer
carries its index and sub-index, a segment's its toggle bit. `SdoAnswers` replaces the client's
`read_response` with one that drops (and counts) the frames that cannot answer the request last
sent, within the same RESPONSE_TIMEOUT.

What it cannot tell apart: a late answer to an earlier request of the same kind on the same object
(two reads of the statusword); that answer is then the value of a moment earlier, as a read that
waited longer would have given.
"""

from __future__ import annotations

import logging
import queue
import struct
import time
from collections.abc import Callable

from canopen.sdo import SdoAbortedError, SdoClient, SdoCommunicationError

logger = logging.getLogger(__name__)

#: CiA 301 command specifiers (the command byte's top three bits).
_CCS_DOWNLOAD_SEGMENT, _CCS_INITIATE_DOWNLOAD, _CCS_INITIATE_UPLOAD, _CCS_UPLOAD_SEGMENT = 0, 1, 2, 3
_SCS_UPLOAD_SEGMENT, _SCS_DOWNLOAD_SEGMENT, _SCS_INITIATE_UPLOAD, _SCS_INITIATE_DOWNLOAD = 0, 1, 2, 3
_ABORT = 0x80
_TOGGLE = 0x10
#: The server's command specifier that answers each client command specifier.
_ANSWER = {
    _CCS_INITIATE_DOWNLOAD: _SCS_INITIATE_DOWNLOAD,
    _CCS_INITIATE_UPLOAD: _SCS_INITIATE_UPLOAD,
    _CCS_DOWNLOAD_SEGMENT: _SCS_DOWNLOAD_SEGMENT,
    _CCS_UPLOAD_SEGMENT: _SCS_UPLOAD_SEGMENT,
}


def answers(request: bytes, response: bytes) -> bool:
    """True if the 8-byte SDO `response` can answer `request` (CiA 301, 7.2.4.3): an initiate
    request's answer or abort names its index and sub-index (an abort naming 0x0000:00 is taken
    too: a server that does not fill them in); a segment's answer has its toggle bit (any abort is
    taken); block transfers and unknown commands are not checked."""
    if not request or not response:
        return True
    command = request[0] >> 5
    if response[0] == _ABORT:
        if command in (_CCS_INITIATE_DOWNLOAD, _CCS_INITIATE_UPLOAD):
            return response[1:4] in (request[1:4], b"\0\0\0")
        return True
    expected = _ANSWER.get(command)
    if expected is None:
        return True
    if response[0] >> 5 != expected:
        return False
    if command in (_CCS_INITIATE_DOWNLOAD, _CCS_INITIATE_UPLOAD):
        return response[1:4] == request[1:4]
    return response[0] & _TOGGLE == request[0] & _TOGGLE


class SdoAnswers:
    """Installed on one `SdoClient`: remembers the request it sends, and its `read_response` takes
    the first frame that answers it within RESPONSE_TIMEOUT (s), dropping the others.

    `take_frames(deadline)`, when set, is called before each wait: a thread that takes the bus's
    frames itself (no receive thread fills the client's queue) takes them until an answer is queued
    or `deadline` (monotonic s)."""

    def __init__(self, client: SdoClient) -> None:
        self.client = client
        self.dropped = 0  # frames dropped as answers to an earlier request
        self.take_frames: Callable[[float], None] | None = None
        self._request = b""
        self._send_request = client.send_request
        client.send_request = self.send_request
        client.read_response = self.read_response

    def send_request(self, request: bytes) -> None:
        self._request = bytes(request)
        self._send_request(request)

    def read_response(self) -> bytes:
        """The answer to the request last sent; SdoAbortedError if it is an abort,
        SdoCommunicationError if none came within RESPONSE_TIMEOUT."""
        client = self.client
        deadline = time.monotonic() + client.RESPONSE_TIMEOUT
        while True:
            if self.take_frames is not None:
                self.take_frames(deadline)
            try:
                response = client.responses.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise SdoCommunicationError("No SDO response received") from None
            if answers(self._request, response):
                break
            self.dropped += 1
            logger.warning(
                "SDO channel 0x%X: dropped a late answer %s to an earlier request (this one: %s)",
                client.tx_cobid,
                response.hex(),
                self._request.hex(),
            )
        if response[0] == _ABORT:
            (abort_code,) = struct.unpack_from("<L", response, 4)
            raise SdoAbortedError(abort_code)
        return response
