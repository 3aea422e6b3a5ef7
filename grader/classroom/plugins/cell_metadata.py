"""``CheckCellMetadata``: nbgrader's cell metadata checked, once per distinct content."""

from __future__ import annotations

from typing import Any

from nbgrader.preprocessors import NbGraderPreprocessor


class CheckCellMetadata(NbGraderPreprocessor):
    """nbgrader's CheckCellMetadata, with the schema compiled once: nbgrader's checks each cell with
    ``jsonschema.validate``, which first checks the schema itself against JSON Schema's meta-schema, every time
    (a seventh of nbgrader's own time per notebook, for a schema that never changes). Same checks, same errors."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        import traceback

        from nbgrader.nbgraderformat import ValidationError

        try:
            _metadata_validator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise ValidationError(msg)
        return nb, resources


_METADATA_VALIDATOR: list[Any] = []


def _metadata_validator() -> Any:
    """nbgrader's MetadataValidator whose cells are checked by one compiled jsonschema validator."""
    if not _METADATA_VALIDATOR:
        import jsonschema
        from nbgrader.nbgraderformat import MetadataValidator, SchemaTooNewError, SchemaTooOldError

        class CompiledMetadataValidator(MetadataValidator):
            def __init__(self) -> None:
                super().__init__()
                jsonschema.validators.validator_for(self.schema).check_schema(self.schema)  # once
                self.compiled = jsonschema.validators.validator_for(self.schema)(self.schema)
                # metadata found valid, by content: every student's copy of a cell has the same (a notebook has a
                # hundred cells; jsonschema takes ~20 us for each)
                self.valid: set[tuple[Any, ...]] = set()

            def validate_cell(self, cell: Any) -> None:  # nbgrader's, but for the compiled schema
                if "nbgrader" not in cell.metadata:
                    return
                schema = cell.metadata["nbgrader"].get("schema_version", 0)
                if schema < self.schema_version:
                    raise SchemaTooOldError(f"Outdated schema version: {schema} (expected {self.schema_version})",
                                            schema, self.schema_version)
                if schema > self.schema_version:
                    raise SchemaTooNewError(f"Schema version is too new: {schema} (expected {self.schema_version})",
                                            schema, self.schema_version)
                key = _content_key(cell.metadata["nbgrader"])
                if key is not None and key in self.valid:
                    return
                error = jsonschema.exceptions.best_match(self.compiled.iter_errors(cell.metadata["nbgrader"]))
                if error is not None:
                    raise error
                if key is not None and len(self.valid) < 100_000:
                    self.valid.add(key)

        _METADATA_VALIDATOR.append(CompiledMetadataValidator())
    return _METADATA_VALIDATOR[0]


def _content_key(mapping: Any) -> tuple[Any, ...] | None:
    """A dict of plain values as a hashable key that tells 1, 1.0 and True apart (None when a value is not plain)."""
    if not isinstance(mapping, dict):
        return None
    key = []
    for name, value in mapping.items():
        if type(value) not in (str, int, float, bool, type(None)):
            return None
        key.append((name, type(value).__name__, value))
    return tuple(sorted(key, key=lambda item: item[0]))
