"""The framework a section is written against: tools, sections, requirements, schemas, results by reference."""
