"""A calibration file uploaded to the app (``trainplan calibrate``'s TOML), merged over the catalog
with the code ``--calibration`` uses (``planner.catalog.calibration.apply_calibration``).

The bytes go to a private temporary file, read there and removed again, like an uploaded
config.json (``ui.charts.model_from_upload``); the size cap is the same.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from planner.catalog.calibration import MACHINE_FIELDS, CalibrationFile, apply_calibration, read_calibration
from planner.catalog.hardware import Catalog
from planner.catalog.models import MAX_CONFIG_BYTES
from planner.errors import CatalogError
from ui.charts import UploadTooLarge, upload_stem


@dataclass(frozen=True)
class CalibrationUpload:
    """An uploaded calibration file as sent (the cache key of the catalog it makes)."""

    name: str
    data: bytes

    @property
    def shown(self) -> str:
        """The name its messages give (no folders)."""
        return Path(self.name).name or "calibration.toml"


@dataclass(frozen=True)
class Calibrated:
    """The catalog with the file's rates, and where they were measured (the plan card's line)."""

    catalog: Catalog
    name: str
    machine: dict[str, str]  # planner.catalog.calibration.MACHINE_FIELDS
    gpus: tuple[str, ...]  # catalog ids the file measured


def calibrated_from_upload(upload: CalibrationUpload, catalog: Catalog) -> Calibrated:
    """``catalog`` with the upload's measured rates; UploadTooLarge, or CatalogError (one line
    naming the upload, not the temporary file), when the file is unusable."""
    shown = upload.shown
    if len(upload.data) > MAX_CONFIG_BYTES:
        raise UploadTooLarge(shown, len(upload.data), "a calibration file")
    folder = Path(tempfile.mkdtemp(prefix="trainplan-calibration-"))
    path = folder / f"{upload_stem(shown, 'calibration')}.toml"
    try:
        path.write_bytes(upload.data)
        merged = apply_calibration(catalog, path)
        read = read_calibration(path)
    except CatalogError as exc:
        raise CatalogError(str(exc).replace(str(path), shown)) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    gpus = tuple(catalog.gpu(g).id for g in {**read.rates, **read.jobs})
    return Calibrated(merged, shown, read.machine or _job_machine(read), gpus)


def _job_machine(read: CalibrationFile) -> dict[str, str]:
    """What the card names for a file of measured jobs only (``calibrate --calibrate-from``)."""
    job = next(iter(read.jobs.values()))
    return dict.fromkeys(MACHINE_FIELDS, "-") | dict(host=f"job {job.name}", date=job.date)
