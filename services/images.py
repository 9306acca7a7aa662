"""Images the API will take: within the per-image byte limit and pixel size, in a type it reads.

An image over the limits is decoded with Pillow, scaled down and re-encoded (PNG when it has
transparency, else JPEG at falling quality) until it fits; one Pillow cannot decode becomes an error
the caller reports as text. The Read tool's limit is the one used everywhere.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

MAX_IMAGE_BYTES = 3_750_000  # base64 grows by 4/3; the API's per-image limit is 5 MB encoded
MAX_IMAGE_SIDE = 2000  # longest side sent; the API rejects larger than 8000 and scales down past ~1568
API_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_MAX_PIXELS = 100_000_000  # decompression-bomb guard: a tiny file claiming a vast canvas is refused


class ImageError(Exception):
    """An image that cannot be made acceptable, with a one-line reason."""


_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def _open(data: bytes, lenient: bool) -> Any:
    from PIL import Image, ImageFile

    saved = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = lenient  # also skips bad checksums of ancillary PNG chunks
    try:
        with warnings.catch_warnings():  # the pixel check in fit_image is the guard; Pillow's warning is noise
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            if lenient:
                img.load()
        return img
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = saved


def fit_image(data: bytes, media_type: str) -> tuple[bytes, str]:
    """`(data, its real type)` when acceptable as sent, else scaled and re-encoded; ImageError otherwise.

    The type is the one Pillow finds, not the one the server claims (the API rejects a mismatch); an image
    Pillow reads only leniently (say, a PNG with a bad checksum in a metadata chunk) is re-encoded clean."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = _MAX_PIXELS
    clean = True
    try:
        try:
            img = _open(data, lenient=False)
        except Image.DecompressionBombError:
            raise
        except Exception:  # noqa: BLE001 - Pillow raises many kinds for bad input
            img, clean = _open(data, lenient=True), False
        width, height = img.size
    except Image.DecompressionBombError:
        raise ImageError("the image claims too many pixels to decode safely") from None
    except Exception as exc:  # noqa: BLE001
        raise ImageError(f"cannot decode the {media_type} image ({type(exc).__name__})") from None
    if width * height > _MAX_PIXELS:
        raise ImageError(f"the image claims {width}x{height} pixels, too many to decode safely")
    actual = _FORMATS.get(img.format or "")
    if clean and actual and len(data) <= MAX_IMAGE_BYTES and max(width, height) <= MAX_IMAGE_SIDE:
        return data, actual
    try:
        img.load()
    except Exception as exc:  # noqa: BLE001
        raise ImageError(f"cannot decode the {media_type} image ({type(exc).__name__})") from None
    alpha = img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)
    img = img.convert("RGBA" if alpha else "RGB")
    scale = min(1.0, MAX_IMAGE_SIDE / max(width, height))
    quality = 85
    for _ in range(12):
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        frame = img.resize(size, Image.Resampling.LANCZOS) if size != img.size else img
        out = io.BytesIO()
        if alpha:
            frame.save(out, "PNG", optimize=True)
            kind = "image/png"
        else:
            frame.save(out, "JPEG", quality=quality, optimize=True)
            kind = "image/jpeg"
        if out.tell() <= MAX_IMAGE_BYTES:
            return out.getvalue(), kind
        scale *= 0.7
        quality = max(50, quality - 10)
    raise ImageError("the image stays over the size limit even scaled down")
