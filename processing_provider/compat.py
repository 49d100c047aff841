"""QGIS API spellings that differ between 3.22 and later releases, in one place."""

from qgis.core import (
    Qgis,
    QgsFeatureSink,
    QgsProcessing,
    QgsProcessingFeatureSource,
    QgsProcessingParameterDefinition,
    QgsWkbTypes,
)

try:  # QGIS >= 3.36
    VECTOR_POLYGON = Qgis.ProcessingSourceType.VectorPolygon
    VECTOR_POINT = Qgis.ProcessingSourceType.VectorPoint
    TABLE = Qgis.ProcessingSourceType.Vector
    SKIP_GEOMETRY_CHECKS = Qgis.ProcessingFeatureSourceFlag.SkipGeometryValidityChecks
except AttributeError:  # QGIS 3.22 - 3.34
    VECTOR_POLYGON = QgsProcessing.TypeVectorPolygon
    VECTOR_POINT = QgsProcessing.TypeVectorPoint
    TABLE = QgsProcessing.TypeVector
    SKIP_GEOMETRY_CHECKS = QgsProcessingFeatureSource.FlagSkipGeometryValidityChecks

try:  # QGIS >= 3.30
    MULTI_POLYGON = Qgis.WkbType.MultiPolygon
    MULTI_POINT = Qgis.WkbType.MultiPoint
    NO_GEOMETRY = Qgis.WkbType.NoGeometry
except AttributeError:
    MULTI_POLYGON = QgsWkbTypes.MultiPolygon
    MULTI_POINT = QgsWkbTypes.MultiPoint
    NO_GEOMETRY = QgsWkbTypes.NoGeometry

try:  # QGIS >= 3.36
    ADVANCED = Qgis.ProcessingParameterFlag.Advanced
except AttributeError:
    ADVANCED = QgsProcessingParameterDefinition.FlagAdvanced

try:  # QGIS >= 3.36
    FAST_INSERT = QgsFeatureSink.Flag.FastInsert
except AttributeError:
    FAST_INSERT = QgsFeatureSink.FastInsert

QGIS_VERSION = Qgis.QGIS_VERSION
