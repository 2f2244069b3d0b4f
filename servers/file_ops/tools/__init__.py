"""The file_ops tools by domain: each module holds the @tool functions of one domain (reading, writing, finding,
entries, undo, packages and roots) as thin glue over the domain module of the same concern; `calls` is what they
all do around their work. `section.py` declares them."""
