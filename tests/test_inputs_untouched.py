"""No run of any algorithm, through processing.run or qgis_process, writes or changes anything
in the folder of its inputs: no ``.aux.xml`` beside a raster (GDAL's PAM keeps the
statistics QGIS computes when it loads a raster layer, and qgis_process loads every input
itself before the algorithm starts), no sidecar or rewrite of a GeoPackage, CSV, shapefile
or JSON file, and no rewrite of a ``.vrt`` (GDAL 3.6's VRT driver writes the statistics QGIS
computes into the .vrt itself when it closes, whatever GDAL_PAM_ENABLED says). Every file of
the input folder is compared before and after: names, sizes, modification times and
contents."""

import gc
import hashlib
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT, SAMPLE_GPKG
from osgeo import gdal, ogr
from test_core_raster_confusion import write_raster
from test_qgis_process import QGIS_PROCESS, qgis_process_env  # noqa: F401 (fixture)

ANSWERS = ROOT / "resources" / "model_answers"


def make_inputs(folder):
    """Every kind of input the algorithms read, in ``folder``."""
    folder.mkdir()
    shutil.copy(SAMPLE_GPKG, folder / "fields.gpkg")
    for name in ("model_answers.csv", "model_answers.csvt"):
        shutil.copy(ANSWERS / name, folder / name)
    rng = np.random.default_rng(0)
    grid = (500000, 10, 0, 4500000, 0, -10)
    for name in ("p.tif", "r.tif"):
        write_raster(folder / name, rng.integers(0, 3, (20, 20)).astype(np.uint8), grid)
    for name in ("p", "r"):  # VRTs over the GeoTIFFs (relative source paths, as gdalbuildvrt)
        gdal.BuildVRT(str(folder / f"{name}.vrt"), [str(folder / f"{name}.tif")]).FlushCache()
    # A paletted one: QGIS loads it as a layer for its renderer's class labels.
    palette = gdal.Translate(str(folder / "c.tif"), str(folder / "r.tif"))
    table = gdal.ColorTable()
    for value, rgb in enumerate([(0, 0, 255), (0, 128, 0), (255, 255, 0)]):
        table.SetColorEntry(value, (*rgb, 255))
    palette.GetRasterBand(1).SetColorTable(table)
    palette.GetRasterBand(1).SetColorInterpretation(gdal.GCI_PaletteIndex)
    palette = None
    gdal.BuildVRT(str(folder / "c.vrt"), [str(folder / "c.tif")]).FlushCache()
    (folder / "classes.csv").write_text("0,water\n1,forest\n2,crop\n", encoding="utf-8")
    (folder / "taxonomy.json").write_text('{"1": "0"}', encoding="utf-8")
    (folder / "report.json").write_text(json.dumps({"metrics": {"f1": 0.9}}), encoding="utf-8")
    source = ogr.Open(str(folder / "fields.gpkg"))
    target = ogr.GetDriverByName("ESRI Shapefile").CreateDataSource(str(folder / "study.shp"))
    layer = source.GetLayerByName("csb_2016_2023")
    layer.SetAttributeFilter("fid <= 5")
    target.CopyLayer(layer, "study")
    target = source = None  # closed: written
    return folder


def snapshot(folder) -> dict:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns,
                     hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.iterdir())}


def runs(d, o):
    """(algorithm, parameters) of every algorithm of the provider, reading inputs from ``d``
    and writing into ``o``."""
    g = str(d / "fields.gpkg")
    predicted, reference = f"{g}|layername=csb_2017_2024", f"{g}|layername=csb_2016_2023"
    answers = str(d / "model_answers.csv")
    return [
        ("evaluatepolygons", {
            "PREDICTED": predicted, "REFERENCE": reference, "REFERENCE_ID_FIELD": "CSBID",
            "STUDY_AREA": str(d / "study.shp"), "TAXONOMY": str(d / "taxonomy.json"),
            "PREDICTED_CLASS_FIELD": "CDL2023", "REFERENCE_CLASS_FIELD": "CDL2023",
            "PER_FIELD": str(o / "pf.csv"), "TRUE_POSITIVES": str(o / "tp.gpkg"),
            "REPORT_JSON": str(o / "r.json")}),
        ("pixelsperfield", {"INPUT": reference, "GSD": 10, "OUTPUT": str(o / "px.gpkg")}),
        ("spatialiou", {"PREDICTED": predicted, "REFERENCE": reference,
                        "OUTPUT": str(o / "s.csv")}),
        ("overlappairs", {"PREDICTED": predicted, "REFERENCE": reference,
                          "OUTPUT": str(o / "pairs.csv")}),
        ("checkthresholds", {"REPORT": str(d / "report.json"), "CONDITIONS": "f1 >= 0.5",
                             "OUTPUT": str(o / "c.csv")}),
        ("comparepredictions", {"PREDICTED_LAYERS": [predicted, reference],
                                "REFERENCE": reference, "BOOTSTRAP": 10,
                                "OUTPUT_TABLE": str(o / "c.csv")}),
        ("parsemodeloutput", {"INPUT": answers, "TEXT_FIELD": "answer", "ID_FIELD": "id",
                              "RASTER": str(d / "p.tif"), "OUTPUT": str(o / "g.gpkg")}),
        ("spatialmatch", {"INPUT": answers, "ANSWER_FIELD": "answer",
                          "EXPECTED_FIELD": "expected", "IMAGE_WIDTH_FIELD": "width",
                          "IMAGE_HEIGHT_FIELD": "height", "OUTPUT": str(o / "s.csv")}),
        ("rasteriou", {"PREDICTED": str(d / "p.tif"), "REFERENCE": str(d / "r.tif"),
                       "CLASS_NAMES": str(d / "classes.csv"), "OUTPUT_TABLE": str(o / "t.csv"),
                       "AGREEMENT_RASTER": str(o / "a.tif"), "REPORT_JSON": str(o / "r.json")}),
        ("classmapiou", {"PREDICTED": predicted, "PREDICTED_CLASS_FIELD": "CDL2023",
                         "REFERENCE": reference, "REFERENCE_CLASS_FIELD": "CDL2023",
                         "STUDY_AREA": str(d / "study.shp"), "OUTPUT_TABLE": str(o / "t.csv")}),
    ]


ALGORITHMS = [name for name, _ in runs(ROOT, ROOT)]


def vrt_runs(d, o):
    """(case, algorithm, parameters) of the algorithms that read rasters, with .vrt inputs."""
    answers = str(d / "model_answers.csv")
    return [
        ("rasteriou", "rasteriou", {
            "PREDICTED": str(d / "p.vrt"), "REFERENCE": str(d / "r.vrt"),
            "OUTPUT_TABLE": str(o / "t.csv"), "REPORT_JSON": str(o / "r.json")}),
        ("rasteriou_paletted", "rasteriou", {
            "PREDICTED": str(d / "p.vrt"), "REFERENCE": str(d / "c.vrt"),
            "OUTPUT_TABLE": str(o / "t.csv"), "REPORT_JSON": str(o / "r.json")}),
        ("rasteriou_tif_and_vrt", "rasteriou", {
            "PREDICTED": str(d / "p.tif"), "REFERENCE": str(d / "r.vrt"),
            "CLASS_NAMES": str(d / "classes.csv"), "OUTPUT_TABLE": str(o / "t.csv"),
            "REPORT_JSON": str(o / "r.json")}),
        ("parsemodeloutput", "parsemodeloutput", {
            "INPUT": answers, "TEXT_FIELD": "answer", "ID_FIELD": "id",
            "RASTER": str(d / "p.vrt"), "OUTPUT": str(o / "g.gpkg")}),
    ]


VRT_CASES = [case for case, _, _ in vrt_runs(ROOT, ROOT)]


def _prepared_vrt(tmp_path, case):
    inputs = make_inputs(tmp_path / "inputs")
    out = tmp_path / "out"
    out.mkdir()
    _, algorithm, parameters = {c[0]: c for c in vrt_runs(inputs, out)}[case]
    return inputs, out, algorithm, parameters


def test_every_algorithm_of_the_provider_is_run_here(ioueval_provider):
    assert sorted(ALGORITHMS) == sorted(a.name() for a in ioueval_provider.algorithms())


def _prepared(tmp_path, algorithm):
    inputs = make_inputs(tmp_path / "inputs")
    out = tmp_path / "out"
    out.mkdir()
    return inputs, out, dict(runs(inputs, out))[algorithm]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_processing_run_leaves_the_input_folder_as_it_was(ioueval_provider, tmp_path,
                                                          algorithm):
    from qgis_layers import run

    inputs, out, parameters = _prepared(tmp_path, algorithm)
    before = snapshot(inputs)
    run(f"ioueval:{algorithm}", parameters)
    gc.collect()  # the run's layers closed (GDAL writes a dataset's .aux.xml when it closes)
    assert snapshot(inputs) == before
    assert any(out.iterdir())  # it did run


@pytest.mark.parametrize("case", VRT_CASES)
def test_processing_run_leaves_vrt_inputs_as_they_were(ioueval_provider, tmp_path, case):
    from qgis_layers import run

    inputs, out, algorithm, parameters = _prepared_vrt(tmp_path, case)
    before = snapshot(inputs)
    run(f"ioueval:{algorithm}", parameters)
    gc.collect()  # the run's layers closed (a dirty VRT is rewritten when it closes)
    assert snapshot(inputs) == before, _changed(before, snapshot(inputs))
    assert any(out.iterdir())


def _changed(before, after) -> list:
    """The names of the files added, removed or changed (size, mtime or bytes)."""
    return sorted(name for name in set(before) | set(after)
                  if before.get(name) != after.get(name))


def _qgis_process(env, algorithm, parameters):
    arguments = [f"{name}={item}" for name, value in parameters.items()
                 for item in (value if isinstance(value, list) else [value])]
    done = subprocess.run([QGIS_PROCESS, "run", f"ioueval:{algorithm}", "--", *arguments],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.skipif(sys.platform != "linux", reason="qgis_process.bin is Debian's layout")
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_qgis_process_leaves_the_input_folder_as_it_was(qgis_process_env,  # noqa: F811
                                                        tmp_path, algorithm):
    inputs, out, parameters = _prepared(tmp_path, algorithm)
    before = snapshot(inputs)
    _qgis_process(qgis_process_env, algorithm, parameters)
    assert snapshot(inputs) == before, _changed(before, snapshot(inputs))
    assert any(out.iterdir())


@pytest.mark.skipif(sys.platform != "linux", reason="qgis_process.bin is Debian's layout")
@pytest.mark.parametrize("case", VRT_CASES)
def test_qgis_process_leaves_vrt_inputs_as_they_were(qgis_process_env,  # noqa: F811
                                                     tmp_path, case):
    inputs, out, algorithm, parameters = _prepared_vrt(tmp_path, case)
    before = snapshot(inputs)
    _qgis_process(qgis_process_env, algorithm, parameters)
    assert snapshot(inputs) == before, _changed(before, snapshot(inputs))
    assert any(out.iterdir())


def test_a_vrt_scores_as_the_rasters_it_reads(ioueval_provider, tmp_path):
    # The same pixels through a .vrt and through the GeoTIFF it reads: the same confusion
    # matrix, whichever way the raster was opened.
    from qgis_layers import run

    inputs = make_inputs(tmp_path / "inputs")
    reports = {}
    for kind in ("tif", "vrt"):
        path = tmp_path / f"{kind}.json"
        run("ioueval:rasteriou", {"PREDICTED": str(inputs / f"p.{kind}"),
                                  "REFERENCE": str(inputs / f"r.{kind}"),
                                  "REPORT_JSON": str(path)})
        reports[kind] = json.loads(path.read_text(encoding="utf-8"))
    assert reports["vrt"]["confusion_matrix"] == reports["tif"]["confusion_matrix"]
    assert reports["vrt"]["miou"] == reports["tif"]["miou"]


@pytest.mark.skipif(sys.platform != "linux", reason="qgis_process.bin is Debian's layout")
def test_an_aux_xml_that_was_there_is_read_and_left_as_it_was(qgis_process_env,  # noqa: F811
                                                             tmp_path):
    # A PNG keeps its georeferencing (CRS, geotransform) in img.png.aux.xml: qgis_process
    # loads the raster with GDAL's PAM off, yet the outputs get the CRS and map coordinates
    # the .aux.xml gives, and the file is not rewritten.
    from osgeo import gdal, osr

    inputs = tmp_path / "inputs"
    inputs.mkdir()
    memory = gdal.GetDriverByName("MEM").Create("", 100, 50, 1, gdal.GDT_Byte)
    memory.SetGeoTransform([500000, 10, 0, 4500000, 0, -10])
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    memory.SetProjection(srs.ExportToWkt())
    gdal.GetDriverByName("PNG").CreateCopy(str(inputs / "img.png"), memory)
    memory = None
    assert (inputs / "img.png.aux.xml").exists()
    (inputs / "answers.csv").write_text('id,answer\n1,"[10, 5, 20, 15]"\n', encoding="utf-8")
    before = snapshot(inputs)
    out = tmp_path / "out.gpkg"
    done = subprocess.run(
        [QGIS_PROCESS, "run", "ioueval:parsemodeloutput", "--",
         f"INPUT={inputs / 'answers.csv'}", "TEXT_FIELD=answer", "COORDINATE_FORMAT=1",
         f"RASTER={inputs / 'img.png'}", f"OUTPUT={out}"],
        env=qgis_process_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert snapshot(inputs) == before
    written = ogr.Open(str(out))
    layer = written.GetLayer(0)
    assert layer.GetSpatialRef().GetAuthorityCode(None) == "32633"
    # pixel box x 10..20, y 5..15 -> map x 500,100..500,200, y 4,499,850..4,499,950
    assert layer.GetExtent() == (500100.0, 500200.0, 4499850.0, 4499950.0)


@pytest.mark.skipif(sys.platform != "linux", reason="qgis_process.bin is Debian's layout")
def test_class_names_kept_in_an_aux_xml_are_read_under_qgis_process(qgis_process_env,  # noqa: F811
                                                                   tmp_path):
    # GDAL keeps a GeoTIFF's category names in its .aux.xml (PAM): they name the classes.
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    grid = (500000, 10, 0, 4500000, 0, -10)
    for name in ("p.tif", "r.tif"):
        write_raster(inputs / name, np.array([[0, 1], [1, 0]], np.uint8), grid,
                     categories=["water", "forest"])
    assert (inputs / "r.tif.aux.xml").exists()
    before = snapshot(inputs)
    report = tmp_path / "report.json"
    done = subprocess.run(
        [QGIS_PROCESS, "run", "ioueval:rasteriou", "--", f"PREDICTED={inputs / 'p.tif'}",
         f"REFERENCE={inputs / 'r.tif'}", f"REPORT_JSON={report}"],
        env=qgis_process_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert snapshot(inputs) == before
    per_class = json.loads(report.read_text(encoding="utf-8"))["per_class"]
    assert [per_class[k]["name"] for k in ("0", "1")] == ["water", "forest"]
