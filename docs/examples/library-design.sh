# A drawn sample through the library (docs/library.md): compare_paired with weights alone, and with the
# design they were drawn with.
python "$REPO/docs/examples/library-design.py"
