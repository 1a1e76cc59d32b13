"""The site's Content-Security-Policy (django-csp's CONTENT_SECURITY_POLICY setting).

Scripts and style sheets come only from the site itself: the admin's and automedia's static
files, with no inline script or event handler attribute (Django's admin has none either).
Style attributes stay allowed (`style-src-attr`): the templates set computed widths and
positions in them (the dashboard's meters, the calendar's quiet-hours shading), and an
attribute can neither load a style sheet nor run script. Images come from the site only; a
preview widens img-src on its own page by exactly the origins it draws
(console/preview_images.py, automedia_site.middleware.CSPMiddleware). No page is framed,
and forms post only to the site.
"""

from csp.constants import NONE, SELF, UNSAFE_INLINE

POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    },
}
