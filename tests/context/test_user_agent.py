"""app.context.user_agent: current browsers' real User-Agents, client hints, and hostile ones."""
import pytest

from app.context.user_agent import MAX_PARSED, Client, describe
from tests.fixtures.context import CHROME_ANDROID_PHONE, SAFARI_IPAD

CHROME_WINDOWS = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like "
                  "Gecko) Chrome/131.0.0.0 Safari/537.36")
CHROME_MAC = ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like "
              "Gecko) Chrome/131.0.0.0 Safari/537.36")
SAFARI_MAC = ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, "
              "like Gecko) Version/18.1 Safari/605.1.15")
FIREFOX_WINDOWS = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 "
                   "Firefox/133.0")
FIREFOX_UBUNTU = "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
EDGE_WINDOWS = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like "
                "Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0")
OPERA_WINDOWS = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like "
                 "Gecko) Chrome/130.0.0.0 Safari/537.36 OPR/115.0.0.0")
CHROME_OS = ("Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
             "Chrome/131.0.0.0 Safari/537.36")
SAFARI_IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
                 "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1")
CHROME_IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
                 "(KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1")
FIREFOX_IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
                  "(KHTML, like Gecko) FxiOS/133.0 Mobile/15E148 Safari/605.1.15")
EDGE_IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
               "(KHTML, like Gecko) Version/18.0 EdgiOS/131.2903.68 Mobile/15E148 "
               "Safari/605.1.15")
CHROME_ANDROID_TABLET = ("Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like "
                         "Gecko) Chrome/131.0.0.0 Safari/537.36")
SAMSUNG_PHONE = ("Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S921B) AppleWebKit/537.36 (KHTML, "
                 "like Gecko) SamsungBrowser/27.0 Chrome/125.0.0.0 Mobile Safari/537.36")
SAMSUNG_TABLET = ("Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-X710) AppleWebKit/537.36 (KHTML, "
                  "like Gecko) SamsungBrowser/27.0 Chrome/125.0.0.0 Safari/537.36")
FIREFOX_ANDROID_PHONE = "Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0"
FIREFOX_ANDROID_TABLET = "Mozilla/5.0 (Android 14; Tablet; rv:133.0) Gecko/133.0 Firefox/133.0"
EDGE_ANDROID = ("Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
                "Chrome/131.0.0.0 Mobile Safari/537.36 EdgA/131.0.0.0")
ANDROID_WEBVIEW = ("Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240805.005; wv) "
                   "AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.6778.39 "
                   "Mobile Safari/537.36")
KINDLE_SILK = ("Mozilla/5.0 (Linux; Android 11; KFTRWI) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Silk/130.4.1 like Chrome/130.0.6723.102 Safari/537.36")
OLD_IE_TABLET_PC = ("Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0; "
                    "Tablet PC 2.0)")


@pytest.mark.parametrize(("user_agent", "expected"), [
    (CHROME_WINDOWS, Client("Desktop", "Chrome", "131", "Windows", "10")),
    (CHROME_MAC, Client("Desktop", "Chrome", "131", "macOS", "10")),
    (SAFARI_MAC, Client("Desktop", "Safari", "18", "macOS", "10")),
    (FIREFOX_WINDOWS, Client("Desktop", "Firefox", "133", "Windows", "10")),
    (FIREFOX_UBUNTU, Client("Desktop", "Firefox", "133", "Linux", None)),
    (EDGE_WINDOWS, Client("Desktop", "Edge", "131", "Windows", "10")),
    (OPERA_WINDOWS, Client("Desktop", "Opera", "115", "Windows", "10")),
    (CHROME_OS, Client("Desktop", "Chrome", "131", "Chrome OS", "14541")),
    (SAFARI_IPHONE, Client("Mobile", "Safari", "18", "iOS", "18")),
    (CHROME_IPHONE, Client("Mobile", "Chrome", "131", "iOS", "18")),
    (FIREFOX_IPHONE, Client("Mobile", "Firefox", "133", "iOS", "18")),
    (EDGE_IPHONE, Client("Mobile", "Edge", "131", "iOS", "18")),
    (SAFARI_IPAD, Client("Tablet", "Safari", "18", "iOS", "18")),
    (CHROME_ANDROID_PHONE, Client("Mobile", "Chrome", "131", "Android", "10")),
    (CHROME_ANDROID_TABLET, Client("Tablet", "Chrome", "131", "Android", "10")),
    (SAMSUNG_PHONE, Client("Mobile", "Samsung Internet", "27", "Android", "14")),
    (SAMSUNG_TABLET, Client("Tablet", "Samsung Internet", "27", "Android", "14")),
    (FIREFOX_ANDROID_PHONE, Client("Mobile", "Firefox", "133", "Android", "14")),
    (FIREFOX_ANDROID_TABLET, Client("Tablet", "Firefox", "133", "Android", "14")),
    (EDGE_ANDROID, Client("Mobile", "Edge", "131", "Android", "10")),
    (ANDROID_WEBVIEW, Client("Mobile", "Chrome", "131", "Android", "14")),
    (KINDLE_SILK, Client("Tablet", "Amazon Silk", "130", "Android", "11")),
    (OLD_IE_TABLET_PC, Client("Desktop", "IE", "8", "Windows", "7")),
])
def test_real_user_agents(user_agent, expected):
    assert describe(user_agent) == expected


def test_ipados_asking_for_desktop_sites_reads_as_a_mac():
    # iPadOS Safari's default User-Agent is a Mac's, and Safari sends no client hints.
    assert describe(SAFARI_MAC) == Client("Desktop", "Safari", "18", "macOS", "10")


@pytest.mark.parametrize(("user_agent", "mobile", "platform", "device", "os", "os_version"), [
    # Sec-CH-UA-Mobile: ?1 is a phone whatever the User-Agent says.
    (CHROME_ANDROID_TABLET, "?1", '"Android"', "Mobile", "Android", "10"),
    # ?0 on Android: a tablet, even when the User-Agent carries Mobile (desktop mode off).
    (CHROME_ANDROID_PHONE, "?0", '"Android"', "Tablet", "Android", "10"),
    # ?0 elsewhere: a desktop.
    (CHROME_WINDOWS, "?0", '"Windows"', "Desktop", "Windows", "10"),
    # "Request desktop site" on an Android phone: a Linux User-Agent, the hints tell.
    ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
     "Safari/537.36", "?0", '"Android"', "Tablet", "Android", None),
    # The platform wins over the User-Agent; the version is kept only when both agree.
    (CHROME_WINDOWS, "?0", '"macOS"', "Desktop", "macOS", None),
    (CHROME_OS, "?0", '"Chromium OS"', "Desktop", "Chrome OS", "14541"),
    # An unknown or empty platform hint is ignored, as is a mobile hint that is neither ?0 nor ?1.
    (CHROME_WINDOWS, "?2", '"Unknown"', "Desktop", "Windows", "10"),
    (SAFARI_IPHONE, "", '""', "Mobile", "iOS", "18"),
    (CHROME_WINDOWS, None, '"Haiku<script>"', "Desktop", "Windows", "10"),
])
def test_client_hints_win_where_present(user_agent, mobile, platform, device, os, os_version):
    client = describe(user_agent, mobile, platform)
    assert (client.device, client.os, client.os_version) == (device, os, os_version)


@pytest.mark.parametrize("user_agent", [
    None, "", "curl/8.5.0 but not really", "x" * 8192, "Mozilla/5.0\x00(Windows NT 10.0)",
    "Mozilla/5.0 \ud800\udfff \U0001F600 (iPhone)", "Chrome/" + "9" * 40,
    "Ã°ÂŸÂ˜Â€ mojibake of an emoji as a latin-1 header carries it",
])
def test_garbage_gives_nulls_or_what_can_be_read_never_an_error(user_agent):
    client = describe(user_agent)
    for value in (client.browser, client.browser_version, client.os, client.os_version):
        assert value is None or (value.isprintable() and len(value) <= 64)
    assert client.browser_version is None or client.browser_version.isdigit()


def test_an_absurd_version_is_dropped_not_truncated():
    client = describe("Mozilla/5.0 (Windows NT 10.0) Chrome/" + "9" * 40 + ".0 Safari/537.36")
    assert client.browser == "Chrome" and client.browser_version is None


def test_only_the_first_characters_are_read():
    padded = CHROME_WINDOWS + " " + "x" * (2 * MAX_PARSED)
    assert describe(padded) == describe(CHROME_WINDOWS)
