"""What the Gemini CLI tests share beside their fixtures (conftest.py puts this folder on sys.path)."""

PINNED = "0.61.0"


def base_settings():
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
