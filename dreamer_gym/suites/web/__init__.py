"""What the BrowserGym suites share: Debian's Chromium for playwright, the page as text, the semantic
action language, one warm browser, and the suite lifecycle (:class:`BrowserGymSuite`).

- The browser is Debian's ``chromium`` (``make setup`` installs it), launched by playwright 1.44 through a
  wrapper script this module writes (playwright cannot download its own build here; see
  :func:`chromium_wrapper`).
- Actions are text. BrowserGym's element ids (bids) change from page to page, so the suites also accept a
  semantic language over the accessibility tree that a procedure can reuse across pages::

      click "Submit"                    an element by its visible name or text
      click button 2                    ... or by its role and position (1-based, page order)
      type "Bob" into "Username"        fill a text box found by label/placeholder (or `textbox 1`)
      type "Bob"                        ... the focused text box, else the first one
      check "JE4O" / uncheck "JE4O"     a checkbox or radio button by its label
      select "Drona" in "Country"       an option of a drop-down list (``select "Drona"``: the list holding it)
      focus "Username"                  focus an element
      press "Enter"                     a key, on the focused element

  Suites that browse real sites (WebArena) add :data:`WEB_VERBS`::

      answer "42"                       reply to the user (BrowserGym's ``send_msg_to_user``; ends a WebArena task)
      goto "http://host/page"           open a URL in the current tab
      go back / go forward              browser history
      scroll down / scroll up           scroll the page by one screen

  Raw BrowserGym high-level actions (``click('12')``, ``fill('14', 'x')``) pass through unchanged. An
  action that does not parse, uses a verb the suite does not speak, or names no element on the page is
  answered with an observation that says why and lists the accepted forms; it never raises.

Modules: :mod:`~.chromium` (the browser and install hints), :mod:`~.page` (the page as text),
:mod:`~.actions` (the language), :mod:`~.warm_env` (one warm browser), :mod:`~.suite` (the lifecycle).
"""

from dreamer_gym.suites.web.actions import (
    ACTION_FORMS,
    BASE_VERBS,
    WEB_ACTION_FORMS,
    WEB_VERBS,
    Command,
    Target,
    find,
    parse_command,
    semantic_actions,
    translate,
)
from dreamer_gym.suites.web.chromium import (
    CHROMIUM_FLAGS,
    DEFAULT_CHROMIUM,
    INSTALL_HINT,
    check_chromium,
    chromium_wrapper,
    find_spec,
    pip_hint,
    playwright_chromium_revision,
)
from dreamer_gym.suites.web.page import INTERACTIVE_ROLES, Element, Page, norm, quote, read_page
from dreamer_gym.suites.web.suite import BrowserGymSuite
from dreamer_gym.suites.web.warm_env import lean_playwright_stacks, warm_env_class

__all__ = [
    "ACTION_FORMS", "BASE_VERBS", "CHROMIUM_FLAGS", "DEFAULT_CHROMIUM", "INSTALL_HINT", "INTERACTIVE_ROLES",
    "WEB_ACTION_FORMS", "WEB_VERBS", "BrowserGymSuite", "Command", "Element", "Page", "Target",
    "check_chromium", "chromium_wrapper", "find", "find_spec", "lean_playwright_stacks", "norm",
    "parse_command", "pip_hint", "playwright_chromium_revision", "quote", "read_page", "semantic_actions",
    "translate", "warm_env_class",
]  # fmt: skip
