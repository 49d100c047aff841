"""ioueval:rasteriou through processing.run: outputs, report keys, the issue's values."""

import json

import numpy as np
import pytest
from qgis.core import QgsProcessingContext, QgsProcessingFeedback, QgsProject, QgsVectorLayer
from test_core_confusion import seed_label_maps
from test_core_raster_confusion import write_raster

from iou_evaluation.core.reports.html import lookup, shown_values

ALGORITHM = "ioueval:rasteriou"


def run(parameters):
    import processing

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return processing.run(ALGORITHM, parameters, context=context,
                          feedback=QgsProcessingFeedback())


def outputs(tmp_path):
    return {
        "OUTPUT_TABLE": str(tmp_path / "classes.csv"),
        "REPORT_JSON": str(tmp_path / "report.json"),
        "REPORT_HTML": str(tmp_path / "report.html"),
    }


def test_issue_values(ioueval_provider, tmp_path):
    table = tmp_path / "classes.txt"
    table.write_text("0,background\n1,building\n2,road\n")
    result = run({
        "PREDICTED": write_raster(tmp_path / "p.tif", np.array([0, 1, 0, 1], np.uint8)),
        "REFERENCE": write_raster(tmp_path / "r.tif", np.array([0, 1, 0, 0], np.uint8)),
        "CLASS_NAMES": str(table),
        **outputs(tmp_path),
    })
    assert result["MIOU"] == pytest.approx(7 / 12)
    assert result["PIXEL_ACCURACY"] == pytest.approx(3 / 4)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["per_class"]["0"]["iou"] == pytest.approx(2 / 3)
    assert report["per_class"]["1"]["iou"] == pytest.approx(1 / 2)
    assert report["per_class"]["2"]["iou"] is None
    assert report["per_class"]["2"]["status"] == "absent from both"
    assert report["per_class"]["1"]["name"] == "building"
    assert report["confusion_matrix"]["orientation"] == "rows = prediction, columns = reference"
    for key in ("per_class", "miou", "fwiou", "pixel_accuracy", "confusion_matrix", "classes",
                "alignment"):
        assert key in report
    layer = QgsVectorLayer(str(tmp_path / "classes.csv"), "t", "ogr")
    assert layer.featureCount() == 3
    html = (tmp_path / "report.html").read_text()
    for section in ("coverage", "classes", "confusion", "absent"):
        assert f'id="{section}"' in html
    # Every number on the page is the JSON's.
    for path, text in shown_values(html):
        lookup(report, path)
        assert text


def test_issue_values_zero_ignored(ioueval_provider, tmp_path):
    result = run({
        "PREDICTED": write_raster(tmp_path / "p.tif", np.array([2, 1, 0, 1], np.uint8)),
        "REFERENCE": write_raster(tmp_path / "r.tif", np.array([2, 1, 0, 0], np.uint8)),
        "IGNORE_VALUES": "0",
        **outputs(tmp_path),
    })
    assert result["MIOU"] == 1.0


def test_seed_example_and_agreement_raster(ioueval_provider, tmp_path):
    label, seg = seed_label_maps()
    result = run({
        "PREDICTED": write_raster(tmp_path / "p.tif", seg.astype(np.uint8)),
        "REFERENCE": write_raster(tmp_path / "r.tif", label.astype(np.uint8)),
        "AGREEMENT_RASTER": str(tmp_path / "agreement.tif"),
        **outputs(tmp_path),
    })
    assert round(result["MIOU"], 3) == 0.819
    assert round(result["PIXEL_ACCURACY"], 3) == 0.958
    assert (tmp_path / "agreement.tif").exists()
    assert (tmp_path / "agreement.qml").exists()
    report = json.loads((tmp_path / "report.json").read_text())
    assert [round(report["per_class"][k]["iou"], 3) for k in "012"] == [0.951, 0.803, 0.703]


@pytest.mark.parametrize("text, found", [
    ("", "it is empty"),
    ("# QGIS Generated Color Map Export File\nINTERPOLATION:EXACT\n",
     "only comments and blank lines"),
    ("forest,1\n", "only the line 'forest,1', taken as a header"),
    ("0x10,hex\n", "only the line '0x10,hex', taken as a header"),
])
def test_a_class_table_without_class_rows_is_named(ioueval_provider, tmp_path, text, found):
    # A CLASS_NAMES file with no class row (empty, or one line read as a header) fixed the
    # classes to none: every value found was scored and the report said "file".
    from qgis.core import QgsProcessingException

    table = tmp_path / "classes.txt"
    table.write_text(text)
    with pytest.raises(QgsProcessingException,
                       match=rf"CLASS_NAMES: .* holds no class row \({found}\)"):
        run({
            "PREDICTED": write_raster(tmp_path / "p.tif", np.array([0, 1], np.uint8)),
            "REFERENCE": write_raster(tmp_path / "r.tif", np.array([0, 1], np.uint8)),
            "CLASS_NAMES": str(table),
            **outputs(tmp_path),
        })


@pytest.mark.parametrize("extension", ["vrt", "png"])
def test_an_agreement_raster_gdal_cannot_write_block_by_block_is_named(ioueval_provider,
                                                                      tmp_path, extension):
    # A .vrt holds no pixels (the run ended in GDAL's RuntimeError "Writing through
    # VRTSourcedRasterBand is not supported"); a .png got a GeoTIFF under its name.
    from qgis.core import QgsProcessingException

    agreement = tmp_path / f"agreement.{extension}"
    with pytest.raises(QgsProcessingException,
                       match=rf"AGREEMENT_RASTER: .*cannot write a \.{extension} file"):
        run({
            "PREDICTED": write_raster(tmp_path / "p.tif", np.array([0, 1], np.uint8)),
            "REFERENCE": write_raster(tmp_path / "r.tif", np.array([0, 1], np.uint8)),
            "AGREEMENT_RASTER": str(agreement),
            **outputs(tmp_path),
        })
    assert not agreement.exists()


def test_bad_ignore_values_named(ioueval_provider, tmp_path):
    from qgis.core import QgsProcessingException

    with pytest.raises(QgsProcessingException, match="IGNORE_VALUES"):
        run({
            "PREDICTED": write_raster(tmp_path / "p.tif", np.array([0, 1], np.uint8)),
            "REFERENCE": write_raster(tmp_path / "r.tif", np.array([0, 1], np.uint8)),
            "IGNORE_VALUES": "zero",
            **outputs(tmp_path),
        })


def test_class_names_from_the_paletted_renderer(ioueval_provider, tmp_path):
    from qgis.core import QgsPalettedRasterRenderer, QgsRasterLayer
    from qgis.PyQt.QtGui import QColor

    reference = QgsRasterLayer(
        write_raster(tmp_path / "r.tif", np.array([0, 1, 0, 0], np.uint8)), "r", "gdal"
    )
    reference.setRenderer(QgsPalettedRasterRenderer(reference.dataProvider(), 1, [
        QgsPalettedRasterRenderer.Class(0, QColor("blue"), "water"),
        QgsPalettedRasterRenderer.Class(1, QColor("green"), "forest"),
    ]))
    run({
        "PREDICTED": write_raster(tmp_path / "p.tif", np.array([0, 1, 0, 1], np.uint8)),
        "REFERENCE": reference,
        **outputs(tmp_path),
    })
    report = json.loads((tmp_path / "report.json").read_text())
    assert [report["per_class"][k]["name"] for k in "01"] == ["water", "forest"]


def test_cancel_writes_no_report(ioueval_provider, tmp_path):
    import processing

    feedback = QgsProcessingFeedback()
    feedback.cancel()
    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    try:
        processing.run(ALGORITHM, {
            "PREDICTED": write_raster(tmp_path / "p.tif", np.zeros((4, 4), np.uint8)),
            "REFERENCE": write_raster(tmp_path / "r.tif", np.zeros((4, 4), np.uint8)),
            "AGREEMENT_RASTER": str(tmp_path / "agreement.tif"),
            **outputs(tmp_path),
        }, context=context, feedback=feedback)
    except Exception:  # noqa: BLE001 (QGIS may report the canceled run as an error)
        pass
    assert not (tmp_path / "report.json").exists()
    assert not (tmp_path / "agreement.tif").exists()


def test_input_rasters_are_never_modified(ioueval_provider, tmp_path):
    # No .aux.xml (GDAL PAM: statistics, histograms, RAT) or any other file may appear beside
    # the inputs, whatever reads them (our GDAL reads or QGIS loading the layers).
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    predicted = write_raster(inputs / "pred.tif", np.array([0, 1, 2, 1], np.uint8))
    reference = write_raster(inputs / "ref.tif", np.array([0, 1, 0, 2], np.uint8))
    before = {p.name: p.stat().st_mtime_ns for p in inputs.iterdir()}
    out = tmp_path / "out"
    out.mkdir()
    result = run({"PREDICTED": predicted, "REFERENCE": reference,
                  "OUTPUT_TABLE": str(out / "classes.csv")})
    assert result["MIOU"] is not None
    after = {p.name: p.stat().st_mtime_ns for p in inputs.iterdir()}
    assert after == before


def test_class_tables_written_by_qgis_are_read_as_qgis_writes_them(ioueval_provider, tmp_path):
    from qgis.core import QgsColorRampShader, QgsPalettedRasterRenderer, QgsRasterRendererUtils
    from qgis.PyQt.QtGui import QColor

    reference = write_raster(tmp_path / "r.tif", np.array([1, 2, 3, 3], np.uint8))
    predicted = write_raster(tmp_path / "p.tif", np.array([1, 2, 3, 1], np.uint8))
    # "Export color map to file" (value,red,green,blue,alpha,label; the label keeps commas).
    colour_map = tmp_path / "colours.txt"
    assert QgsRasterRendererUtils.saveColorMapFile(str(colour_map), [
        QgsColorRampShader.ColorRampItem(1, QColor(255, 0, 0), "Forêt, dense"),
        QgsColorRampShader.ColorRampItem(2, QColor(0, 255, 0, 128), "crop land"),
        QgsColorRampShader.ColorRampItem(3, QColor(0, 0, 255), "water"),
    ], QgsColorRampShader.Type.Exact)
    # The paletted renderer's export (value red green blue alpha label, spaces).
    palette = tmp_path / "palette.txt"
    palette.write_text(QgsPalettedRasterRenderer.classDataToString([
        QgsPalettedRasterRenderer.Class(1, QColor("red"), "Forêt dense"),
        QgsPalettedRasterRenderer.Class(2, QColor("green"), "crop land"),
        QgsPalettedRasterRenderer.Class(3, QColor("blue"), "water"),
    ]), encoding="utf-8")
    for table, first in ((colour_map, "Forêt, dense"), (palette, "Forêt dense")):
        result = run({"PREDICTED": predicted, "REFERENCE": reference,
                      "CLASS_NAMES": str(table), **outputs(tmp_path)})
        report = json.loads((tmp_path / "report.json").read_text())
        assert [report["per_class"][k]["name"] for k in "123"] == [first, "crop land", "water"]
        # By hand: 1 has TP 1, FP 1 (the last pixel); 2 exact; 3 TP 1, FN 1.
        assert result["MIOU"] == pytest.approx((1 / 2 + 1 + 1 / 2) / 3)


def test_float_raster_classes_match_the_class_table(ioueval_provider, tmp_path):
    table = tmp_path / "classes.csv"
    table.write_text("0.1,wet\n0.2,dry\n")
    pixels = np.array([0.1, 0.2, 0.2, 0.1], np.float32)
    run({"PREDICTED": write_raster(tmp_path / "p.tif", pixels),
         "REFERENCE": write_raster(tmp_path / "r.tif", pixels),
         "CLASS_NAMES": str(table), **outputs(tmp_path)})
    report = json.loads((tmp_path / "report.json").read_text())
    assert sorted(report["per_class"]) == ["0.1", "0.2"]
    assert report["per_class"]["0.1"]["iou"] == 1.0
    assert not any("not in the class table" in w for w in report["warnings"])


def test_names_from_a_rat_with_linear_binning(ioueval_provider, tmp_path):
    from osgeo import gdal

    path = write_raster(tmp_path / "r.tif", np.array([10, 12, 15, 24], np.uint8))
    dataset = gdal.Open(path, gdal.GA_Update)
    rat = gdal.RasterAttributeTable()
    rat.CreateColumn("Class", gdal.GFT_String, gdal.GFU_Name)
    rat.SetRowCount(3)
    for row, name in enumerate(("sand", "grass", "forest")):
        rat.SetValueAsString(row, 0, name)
    rat.SetLinearBinning(10.0, 5.0)
    dataset.GetRasterBand(1).SetDefaultRAT(rat)
    dataset = None
    run({"PREDICTED": path, "REFERENCE": path, **outputs(tmp_path)})
    report = json.loads((tmp_path / "report.json").read_text())
    names = {key: row["name"] for key, row in report["per_class"].items()}
    assert names == {"10": "sand", "12": "sand", "15": "grass", "24": "forest"}


def test_web_mercator_areas_are_on_the_ground_with_a_warning(ioueval_provider, tmp_path):
    import pyproj

    x, y = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857",
                                       always_xy=True).transform(10, 60)
    gt = (x - 1000, 1000.0, 0, y + 1000, 0, -1000.0)  # a 2 km square at 60° N: 4 km² plane
    path = write_raster(tmp_path / "m.tif", np.ones((2, 2), np.uint8), gt, "EPSG:3857")
    run({"PREDICTED": path, "REFERENCE": path, **outputs(tmp_path)})
    report = json.loads((tmp_path / "report.json").read_text())
    area = report["per_class"]["1"]["areas"]["tp_m2"]
    assert 0.99e6 < area < 1.01e6  # about 1 km² on the ground
    assert any("not equal-area" in w for w in report["warnings"])


def test_paletted_renderer_of_a_float_raster_names_its_classes(ioueval_provider, tmp_path):
    from qgis.core import QgsPalettedRasterRenderer, QgsRasterLayer

    pixels = np.array([0.1, 0.2, 0.2, 0.1], np.float32)
    reference = QgsRasterLayer(write_raster(tmp_path / "r.tif", pixels), "r", "gdal")
    # QGIS's own classes of the raster: its values as doubles (0.10000000149011612).
    classes = QgsPalettedRasterRenderer.classDataFromRaster(reference.dataProvider(), 1)
    assert [round(c.value, 6) for c in classes] == [0.1, 0.2]
    for item, label in zip(classes, ("wet", "dry")):
        item.label = label
    reference.setRenderer(QgsPalettedRasterRenderer(reference.dataProvider(), 1, classes))
    run({"PREDICTED": write_raster(tmp_path / "p.tif", pixels), "REFERENCE": reference,
         **outputs(tmp_path)})
    report = json.loads((tmp_path / "report.json").read_text())
    assert {k: row["name"] for k, row in report["per_class"].items()} == {"0.1": "wet",
                                                                          "0.2": "dry"}
