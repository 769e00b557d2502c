"""The JSON Schema of the two kinds of declaration file, and validation against it."""
