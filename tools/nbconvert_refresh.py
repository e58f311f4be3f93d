# nbconvert settings for `make refresh` (jupyter nbconvert --config tools/nbconvert_refresh.py ...):
# re-execute the notebooks in place and store only what a reader needs.
c = get_config()  # noqa: F821  (traitlets' config loader defines it)

c.ExecutePreprocessor.timeout = 300
# nbclient (nbconvert's executor) writes no widget state into the notebook's metadata and no
# execution timestamps into the cells (they change on every run and would hide the real changes)
c.ExecutePreprocessor.store_widget_state = False
c.ExecutePreprocessor.record_timing = False
# ... and nbconvert's ClearMetadataPreprocessor drops any saved earlier (JupyterLab can save widget
# state and timings), keeping what the notebooks use: the kernelspec, language_info and cell tags
c.ClearMetadataPreprocessor.enabled = True
c.ClearMetadataPreprocessor.preserve_nb_metadata_mask = {"kernelspec", "language_info"}
c.ClearMetadataPreprocessor.preserve_cell_metadata_mask = {"tags"}
# The widget views themselves (outputs of MIME type application/vnd.jupyter.widget-view+json) have no
# nbconvert option: tools/strip_widget_views.py drops them after this run.
