"""Beiwe's mobile API as a phone speaks it: the password as the app sends it, the form fields of each route, and
survey answers encrypted in Beiwe's file format (an RSA-wrapped AES key, then AES-CBC lines), which the mock server
(and a real Beiwe server) decrypts. Needs `cryptography` (`pip install "survey-trio[locust]"`).
"""
import base64
import hashlib
import os

REGISTER = "/register_user"
SET_TOKEN = "/set_fcm_token"
DOWNLOAD = "/download_surveys"
HEARTBEAT = "/mobile-heartbeat"
UPLOAD = "/upload"
SETTINGS = "/get_latest_device_settings"


def b64url(data):
    """Base64url with padding, as Beiwe writes it."""
    return base64.urlsafe_b64encode(data).decode()


def password_hash(password):
    """The password as the app sends it: base64url(SHA-256(password))."""
    return b64url(hashlib.sha256(password.encode()).digest())


def form(patient_id, password, device_id, **fields):
    """A mobile request's form: credentials (hashed) and the route's own fields."""
    return {"patient_id": patient_id, "password": password_hash(password), "device_id": device_id, **fields}


def encrypted_answers(public_key_text, rows):
    """A survey answers file in Beiwe's format for the study key `public_key_text` (base64 DER, `client_public_key`):
    the first line the AES key under RSA (raw, as Beiwe's apps do), then one `iv:ciphertext` line per CSV row."""
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.serialization import load_der_public_key

    key = load_der_public_key(base64.b64decode(public_key_text)).public_numbers()
    aes_key = os.urandom(16)
    message = int.from_bytes(b64url(aes_key).encode(), "big")
    size = (key.n.bit_length() + 7) // 8
    lines = [b64url(pow(message, key.e, key.n).to_bytes(size, "big"))]
    for row in rows:
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        encryptor = Cipher(algorithms.AES(aes_key), modes.CBC(iv)).encryptor()
        cipher = encryptor.update(padder.update(row.encode()) + padder.finalize()) + encryptor.finalize()
        lines.append(b64url(iv) + ":" + b64url(cipher))
    return "\n".join(lines)


def answers_csv(answers):
    """Beiwe's survey answers CSV: a header, then `question id,question type,question text,options,answer` rows.
    `answers` maps a question id to `(type, text, options, answer)`."""
    rows = ["question id,question type,question text,question answer options,answer"]
    for question_id, (kind, text, options, answer) in answers.items():
        rows.append(",".join([question_id, kind, text, options, answer]))
    return rows
