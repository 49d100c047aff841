"""QGIS API spellings that differ between 3.22 and later releases, in one place."""

from qgis.core import (
    Qgis,
    QgsCoordinateReferenceSystem,
    QgsFeatureRequest,
    QgsFeatureSink,
    QgsFields,
    QgsProcessing,
    QgsProcessingFeatureSource,
    QgsProcessingParameterDefinition,
    QgsProcessingParameterField,
    QgsProcessingParameterNumber,
    QgsProcessingUtils,
    QgsProperty,
    QgsWkbTypes,
)
from qgis.PyQt.QtCore import QMetaType

try:  # QGIS >= 3.36
    VECTOR_POLYGON = Qgis.ProcessingSourceType.VectorPolygon
    VECTOR_POINT = Qgis.ProcessingSourceType.VectorPoint
    TABLE = Qgis.ProcessingSourceType.Vector
    SKIP_GEOMETRY_CHECKS = Qgis.ProcessingFeatureSourceFlag.SkipGeometryValidityChecks
except AttributeError:  # QGIS 3.22 - 3.34
    VECTOR_POLYGON = QgsProcessing.SourceType.TypeVectorPolygon
    VECTOR_POINT = QgsProcessing.SourceType.TypeVectorPoint
    TABLE = QgsProcessing.SourceType.TypeVector
    SKIP_GEOMETRY_CHECKS = QgsProcessingFeatureSource.Flag.FlagSkipGeometryValidityChecks

try:  # QGIS >= 3.30
    MULTI_POLYGON = Qgis.WkbType.MultiPolygon
    MULTI_POINT = Qgis.WkbType.MultiPoint
    NO_GEOMETRY = Qgis.WkbType.NoGeometry
except AttributeError:
    MULTI_POLYGON = QgsWkbTypes.Type.MultiPolygon
    MULTI_POINT = QgsWkbTypes.Type.MultiPoint
    NO_GEOMETRY = QgsWkbTypes.Type.NoGeometry

try:  # QGIS >= 3.36
    ADVANCED = Qgis.ProcessingParameterFlag.Advanced
except AttributeError:
    ADVANCED = QgsProcessingParameterDefinition.Flag.FlagAdvanced

FAST_INSERT = QgsFeatureSink.Flag.FastInsert

#: QgsProcessingUtils.mapLayerFromString's hint for a raster layer.
RASTER_LAYER_HINT = QgsProcessingUtils.LayerHint.Raster

try:  # QGIS >= 3.30
    GEOMETRY_NULL = Qgis.GeometryType.Null
    GEOMETRY_POLYGON = Qgis.GeometryType.Polygon
    GEOMETRY_UNKNOWN = Qgis.GeometryType.Unknown
except AttributeError:
    GEOMETRY_NULL = QgsWkbTypes.GeometryType.NullGeometry
    GEOMETRY_POLYGON = QgsWkbTypes.GeometryType.PolygonGeometry
    GEOMETRY_UNKNOWN = QgsWkbTypes.GeometryType.UnknownGeometry

try:  # QGIS >= 3.36
    NUMBER_DOUBLE = Qgis.ProcessingNumberParameterType.Double
    NUMBER_INTEGER = Qgis.ProcessingNumberParameterType.Integer
    FIELD_PARAMETER_ANY = Qgis.ProcessingFieldParameterDataType.Any
    FIELD_PARAMETER_NUMERIC = Qgis.ProcessingFieldParameterDataType.Numeric
    FIELD_PARAMETER_STRING = Qgis.ProcessingFieldParameterDataType.String
    WKT2_2019 = Qgis.CrsWktVariant.Wkt2_2019
    REQUEST_NO_GEOMETRY = Qgis.FeatureRequestFlag.NoGeometry
    STATIC_PROPERTY = Qgis.PropertyType.Static
except AttributeError:
    NUMBER_DOUBLE = QgsProcessingParameterNumber.Type.Double
    NUMBER_INTEGER = QgsProcessingParameterNumber.Type.Integer
    FIELD_PARAMETER_ANY = QgsProcessingParameterField.DataType.Any
    FIELD_PARAMETER_NUMERIC = QgsProcessingParameterField.DataType.Numeric
    FIELD_PARAMETER_STRING = QgsProcessingParameterField.DataType.String
    WKT2_2019 = QgsCoordinateReferenceSystem.WktVariant.WKT2_2019
    REQUEST_NO_GEOMETRY = QgsFeatureRequest.Flag.NoGeometry
    STATIC_PROPERTY = QgsProperty.Type.StaticProperty

try:  # QGIS >= 3.38
    ORIGIN_PROVIDER = Qgis.FieldOrigin.Provider
except AttributeError:
    ORIGIN_PROVIDER = QgsFields.FieldOrigin.OriginProvider

QGIS_VERSION = Qgis.QGIS_VERSION


def save_style_to_database(layer, name: str, description: str, use_as_default: bool) -> str:
    """Store ``layer``'s style in its database (a GeoPackage's layer_styles table); returns
    the error text, "" when stored. ``saveStyleToDatabaseV2`` where QGIS has it (3.44
    deprecates ``saveStyleToDatabase`` for it), else ``saveStyleToDatabase``."""
    if hasattr(layer, "saveStyleToDatabaseV2"):
        _, error = layer.saveStyleToDatabaseV2(name, description, use_as_default, "")
        return error
    return layer.saveStyleToDatabase(name, description, use_as_default, "")


def parameter_as_fields(algorithm, parameters, name, context) -> list:
    """The field names a field parameter holds: ``parameterAsStrings`` where QGIS has it
    (3.40 deprecates ``parameterAsFields`` for it), else ``parameterAsFields`` (3.22)."""
    if hasattr(algorithm, "parameterAsStrings"):
        return algorithm.parameterAsStrings(parameters, name, context)
    return algorithm.parameterAsFields(parameters, name, context)


# Field types. QGIS 3.38 deprecated QgsField(name, QVariant.Type) for QgsField(name,
# QMetaType.Type), and Qt 6 has no QVariant type enum at all; QGIS 3.22 - 3.36 take a
# QVariant.Type, which PyQt5 also accepts as its integer id, the same as QMetaType.Type's.
_META_TYPE_FIELDS = Qgis.QGIS_VERSION_INT >= 33800


def _field_type(meta_type):
    return meta_type if _META_TYPE_FIELDS else int(meta_type)


FIELD_BOOL = _field_type(QMetaType.Type.Bool)
FIELD_INT = _field_type(QMetaType.Type.Int)
FIELD_UINT = _field_type(QMetaType.Type.UInt)
FIELD_LONG = _field_type(QMetaType.Type.LongLong)
FIELD_ULONG = _field_type(QMetaType.Type.ULongLong)
FIELD_DOUBLE = _field_type(QMetaType.Type.Double)
FIELD_STRING = _field_type(QMetaType.Type.QString)
FIELD_DATE = _field_type(QMetaType.Type.QDate)
FIELD_TIME = _field_type(QMetaType.Type.QTime)
FIELD_DATETIME = _field_type(QMetaType.Type.QDateTime)


def field_type_id(field_type) -> int:
    """The integer id of a field type: a QgsField.type() (a QVariant.Type on Qt 5, a
    QMetaType.Type on Qt 6), one of the FIELD_* constants, or an int. The ids are QMetaType's
    (Int 2, LongLong 4, Double 6, QString 10, ...), the same under Qt 5 and Qt 6."""
    return int(getattr(field_type, "value", field_type))
