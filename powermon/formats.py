"""The names and versions of powermon's file formats, and the plausibility limits their owners check (no
imports: writers use these without paying for the readers' validation)."""

#: a samples file's sidecar (``S.csv.json``): ``family/version``; a reader takes newer versions as far as it knows them
SAMPLES_FORMAT = "archline.samples/1"
#: a raw PowerMon 2 capture's sidecar (``C.raw.bin.json``)
RAW_FORMAT = "archline.powermon2.raw/1"
#: the largest clock drift a sidecar may claim: a quartz crystal drifts tens of ppm; 1000 ppm is a damaged file
MAX_DRIFT_PPM = 1000.0
#: a power_w column may differ from voltage_v x current_a by this share (plus POWER_ABS_TOL_W): the files hold 7
#: significant digits of each, so an honest product agrees to ~1e-6
POWER_REL_TOL = 1e-3
POWER_ABS_TOL_W = 1e-3
#: the most a raw capture read from a pipe may hold: a day of the PowerMon 2's fastest stream (3072 four-byte
#: records a second) is 1.06e9 bytes
MAX_CAPTURE_STREAM_BYTES = 1 << 30
