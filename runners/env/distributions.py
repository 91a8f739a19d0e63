"""Which distribution provides an importable module, for the names that differ.

Most packages install a module of their own name (``requests`` from
``requests``); this table holds the well-known exceptions. A dotted key wins
over its top-level name (``google.protobuf`` before ``google``).
"""

from __future__ import annotations

MODULE_TO_DISTRIBUTION: dict[str, str] = {
    "yaml": "PyYAML",
    "cv2": "opencv-python-headless",
    "PIL": "Pillow",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "google.protobuf": "protobuf",
    "attr": "attrs",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "serial": "pyserial",
    "magic": "python-magic",
    "git": "GitPython",
    "github": "PyGithub",
    "zmq": "pyzmq",
    "fitz": "PyMuPDF",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "Levenshtein": "python-Levenshtein",
    "hydra": "hydra-core",
    "tensorboardX": "tensorboardX",
    "pynvml": "nvidia-ml-py",
    "multipart": "python-multipart",
    "jose": "python-jose",
    "Bio": "biopython",
    "pkg_resources": "setuptools",
}


def distribution_for(module: str) -> str:
    """The distribution to install for ``module`` (a dotted name from an import error)."""
    parts = module.split(".")
    for length in range(len(parts), 0, -1):
        found = MODULE_TO_DISTRIBUTION.get(".".join(parts[:length]))
        if found is not None:
            return found
    return parts[0].replace("_", "-")
