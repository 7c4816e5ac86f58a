"""Secrets of a local secure cluster: a self-signed CA, the brokers' keystore and a SCRAM user.

Made once per home folder with the JDK's `keytool` (the brokers read the PKCS12 keystore it writes;
clients get the CA as PEM). Files are readable by their owner only; the SCRAM password lives in a
file, so what `infra up --secure` prints never contains it.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from assetbus.infra.errors import InfraError

SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_USER = "assetbus"
VALIDITY_DAYS = "3650"


@dataclass(frozen=True)
class SecureMaterial:
    """Where the CA, the brokers' keystore and the SCRAM user's password are."""

    folder: Path

    @property
    def ca_pem(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.folder / "broker.p12"

    @property
    def keystore_password_file(self) -> Path:
        return self.folder / "keystore-password"

    @property
    def scram_password_file(self) -> Path:
        return self.folder / "scram-password"

    @property
    def complete(self) -> bool:
        files = (self.ca_pem, self.keystore, self.keystore_password_file, self.scram_password_file)
        return all(path.is_file() for path in files)

    def keystore_password(self) -> str:
        return self.keystore_password_file.read_text().strip()

    def scram_password(self) -> str:
        return self.scram_password_file.read_text().strip()

    def scram_credential(self) -> str:
        """The `StorageTool format --add-scram` argument that creates the SCRAM user."""
        return f"{SCRAM_MECHANISM}=[name={SCRAM_USER},password={self.scram_password()}]"


def _write_secret(path: Path) -> None:
    path.write_text(secrets.token_urlsafe(24) + "\n")
    path.chmod(0o600)


def _keytool(*args: str, log: Path) -> None:
    keytool = shutil.which("keytool")
    if keytool is None:
        raise InfraError("keytool (from the JDK) is not installed; install openjdk-17-jre-headless.")
    with log.open("ab") as out:
        result = subprocess.run([keytool, *args], stdout=out, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        raise InfraError(f"keytool failed making the local cluster's certificates; see {log}.")


def ensure_material(folder: Path, log: Path) -> SecureMaterial:
    """The CA, keystore and SCRAM password in `folder`, made now unless a previous run made them all."""
    material = SecureMaterial(folder)
    if material.complete:
        return material
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, mode=0o700)
    _write_secret(material.keystore_password_file)
    _write_secret(material.scram_password_file)
    password = material.keystore_password()
    ca_store, csr, signed = folder / "ca.p12", folder / "broker.csr", folder / "broker.pem"
    store = ("-storetype", "PKCS12", "-storepass", password, "-keypass", password)
    _keytool("-genkeypair", "-alias", "ca", "-dname", "CN=assetbus local CA", "-keyalg", "RSA", "-keysize", "2048",
             "-validity", VALIDITY_DAYS, "-ext", "bc:c", "-keystore", str(ca_store), *store, log=log)
    _keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", str(ca_store), "-storepass", password,
             "-file", str(material.ca_pem), log=log)
    _keytool("-genkeypair", "-alias", "broker", "-dname", "CN=localhost", "-keyalg", "RSA", "-keysize", "2048",
             "-validity", VALIDITY_DAYS, "-keystore", str(material.keystore), *store, log=log)
    _keytool("-certreq", "-alias", "broker", "-keystore", str(material.keystore), "-storepass", password,
             "-file", str(csr), log=log)
    _keytool("-gencert", "-rfc", "-alias", "ca", "-keystore", str(ca_store), "-storepass", password,
             "-infile", str(csr), "-outfile", str(signed), "-validity", VALIDITY_DAYS,
             "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-ext", "EKU=serverAuth", log=log)
    _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(material.ca_pem),
             "-keystore", str(material.keystore), *store, log=log)
    _keytool("-importcert", "-noprompt", "-alias", "broker", "-file", str(signed),
             "-keystore", str(material.keystore), *store, log=log)
    for path in (ca_store, csr, signed, material.keystore):
        path.chmod(0o600)
    material.ca_pem.chmod(0o644)
    return material
