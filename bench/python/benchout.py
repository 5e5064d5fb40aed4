"""What every bench/python measurement script does with its result: one JSON
document, written to --out when given, else printed."""
import json


def write_json(doc, out):
    """Write doc as indented JSON to the file out, or to stdout when out is empty."""
    text = json.dumps(doc, indent=1)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
