"""nbgrader configuration of the course. Run nbgrader from the repository root.

solutions/<assignment>/*.ipynb  instructor notebooks (nbgrader's source/), the one source of truth
notebooks/<assignment>/*.ipynb  student notebooks (nbgrader's release/), generated: `make release`
submitted/<student>/<assignment>/*.ipynb  what students hand in; autograded/, feedback/, gradebook.db follow
"""

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

# nbgrader 0.9.6 with SQLAlchemy 2 warns three times per student that new gradebook rows are "not in session";
# they are added right after, nothing is lost (the reason: grader/classroom/nbgrader_plugins.py, silence_harmless_warnings).
from grader.classroom.nbgrader_plugins import silence_harmless_warnings  # noqa: E402

silence_harmless_warnings()

c.CourseDirectory.course_id = "autograd-functions"
# nbgrader runs the `alembic` program when it creates a gradebook (nbgrader.api.get_alembic_version): the venv's,
# whoever runs nbgrader and however (.venv/bin/nbgrader with a PATH that lacks .venv/bin crashed half-way, leaving a
# gradebook without its alembic version that `nbgrader db upgrade` cannot repair).
import os  # noqa: E402
import sysconfig  # noqa: E402

_scripts = sysconfig.get_path("scripts")
if os.path.isfile(os.path.join(_scripts, "alembic")) and os.environ.get("PATH", "").split(os.pathsep)[0] != _scripts:
    os.environ["PATH"] = _scripts + os.pathsep + os.environ.get("PATH", os.defpath)
# A shared teaching server (docs/shared-server.md): nbgrader's collect, each collected submission left
# 700/600 to the instructor (nbgrader keeps the exchange's 777, where another student could write into it).
c.ExchangeFactory.collect = "grader.classroom.shared.PrivateCollect"
# nbgrader's release_feedback stopped for the whole class at the first submission copied into submitted/ by hand
# (no submission_secret.txt); that student is now left out with one line, the others get their feedback.
c.ExchangeFactory.release_feedback = "grader.classroom.shared.HandInTolerantReleaseFeedback"
# nbgrader export: the course's assignment once per student, in whichever language they took (autograd or
# autograd-zh: nbgrader wrote a 0 row for the other one), into a grades.csv only the instructor can read.
c.ExportApp.plugin_class = "grader.classroom.plugins.export.OneCourseCsvExport"
# The exchange: the one make shared-server made (recorded in the course folder), GRADER_EXCHANGE to override, else
# /srv/nbgrader/exchange, the students' environment's default. nbgrader's own default is another folder
# (/usr/local/share/nbgrader/exchange): a plain `nbgrader release_assignment` released where no student looked.
from grader.classroom.shared import exchange_root  # noqa: E402

c.Exchange.root = exchange_root(__import__("pathlib").Path(__file__).resolve().parent)
# The gradebook: nbgrader's default (<course>/gradebook.db, SQLite) or, when GRADER_DB_URL is set, that database
# (PostgreSQL: several nbgrader processes can write it at once, `make autograde JOBS=N`). Every nbgrader command
# run with it set (autograde, feedback, export, formgrader) uses the same gradebook.

if os.environ.get("GRADER_DB_URL", "").strip():
    c.CourseDirectory.db_url = os.environ["GRADER_DB_URL"].strip()
# What nbgrader logs about a submission (student ids, notebook and cell names: its log records' arguments) reaches
# the terminal and the logs with control characters and ANSI escapes written out (\x1b, \n), and the gradebook's
# password as *** (grader/classroom/untrusted.py). grader.classroom.course passes the gradebook here, never on a command line.
from grader.classroom.untrusted import escape_log_arguments  # noqa: E402

escape_log_arguments(secrets=[os.environ.get("GRADER_DB_URL", "").strip()])
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
# solutions/autograd-zh/README.md says that folder is generated (`make release`): for the instructor, not released to
# students. (nbgrader's default list, plus README.md.)
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "README.md"]

# Stubs that name the exercise and the function to write (grader/classroom/nbgrader_plugins.py).
# nbgrader 0.9.6's default list, with ClearSolutions replaced.
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "grader.classroom.nbgrader_plugins.NamedStubs",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.GenerateAssignment.create_assignment = True

# Trusted autograding (grader.classroom.nbgrader_plugins.TrustedExecute replaces nbgrader's Execute): student code
# runs under bubblewrap, test cells are judged outside it. The rest of nbgrader's pipeline is unchanged.
# (CheckCellMetadata: nbgrader's, with its schema compiled once instead of once per cell.)
c.Autograde.autograde_preprocessors = [
    "grader.classroom.nbgrader_plugins.TrustedExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "grader.classroom.nbgrader_plugins.SaveAutoGradesAtOnce",  # nbgrader's rows, written in one transaction
    "grader.classroom.plugins.late.CourseLatePenalties",  # deadlines.toml: due dates, extensions, the late policy
    "grader.classroom.nbgrader_plugins.CheckCellMetadata",
]
# Renamed or deleted test cells: the submission is still graded, with the instructor's test cells put back.
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "grader.classroom.nbgrader_plugins.ForgetUnknownCells",
    "grader.classroom.nbgrader_plugins.OverwriteReleasedCells",  # nbgrader's, without the false alarm on hidden tests' checksums
    "grader.classroom.nbgrader_plugins.CheckCellMetadata",
]
# A submission that is not a readable notebook is graded 0 with the reason (the rest of the class as usual), and
# the pool of sandboxed workers starts before nbgrader records anything: if it cannot, autograde stops (exit 1).
c.Autograde.exporter_class = "grader.classroom.nbgrader_plugins.SubmissionExporter"
# nbconvert's own option: the notebook is validated once, after the last preprocessor, instead of after each one
# (about a tenth of nbgrader's time per notebook); a preprocessor that breaks a notebook still fails it.
c.SubmissionExporter.optimistic_validation = True
c.OverwriteCells.add_missing_cells = True
c.OverwriteCells.missing_cell_notification = "# This cell ({cell_id}) was missing from the submission; it was put back.\n"
# Seconds per notebook: TrustedExecute.timeout is left at its default, grader.boundary.limits.NOTEBOOK_SECONDS, the
# same as `grader grade --timeout` (tests/test_time_limit.py checks both).
c.TrustedExecute.allow_unsandboxed = False  # set True only where bubblewrap cannot run and the code is trusted

# Feedback shows each check's name, outcome and diagnosis, never the code of hidden tests (nbgrader #917).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "grader.classroom.nbgrader_plugins.HideHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "grader.classroom.nbgrader_plugins.WrapLongLines",  # long diagnosis lines wrap: no sideways scrolling
]


# No student markup is live in a page (grader/classroom/untrusted.py): markdown cells, and nbgrader's comments, rendered by
# nbconvert then cleaned by nh3 (no script, no on* attribute, no javascript: URL; headings, tables, code, math,
# links and images stay), in every HTMLExporter nbgrader builds: `nbgrader generate_feedback` and formgrader's
# view of a submission (both use nbgrader's templates, which call this filter and not nbconvert's clean_html).
# sanitize_html: nbconvert's own cleaning of HTML outputs and raw cells too, and no JavaScript outputs.
# clean_html: nbconvert's bleach list has no <img>, so the graphs the grader keeps (an SVG as a data: image, which runs
# no script) came out as escaped text; nh3's cleaning keeps images from data: URLs and removes everything live.
# The feedback page: nbgrader's template with each test cell named in its index (grader/classroom/templates/feedback),
# found before nbgrader's own (GenerateFeedback adds nbgrader's folder only when none is configured: it is given too).
import nbgrader as _nbgrader  # noqa: E402

c.HTMLExporter.extra_template_basedirs = [
    os.path.join(os.path.dirname(os.path.realpath(__file__)), "grader", "classroom", "templates"),
    os.path.join(os.path.dirname(_nbgrader.__file__), "server_extensions", "formgrader", "templates"),
]
# course_word, page_language: the feedback page's own words and its lang attribute in the notebook's language
c.HTMLExporter.filters = {"markdown2html": "grader.classroom.untrusted.SanitizedMarkdown", "clean_html": "grader.classroom.untrusted.clean_html",
                          "course_word": "grader.classroom.feedback_words.course_word",
                          "page_language": "grader.classroom.feedback_words.page_language"}
c.HTMLExporter.sanitize_html = True
# A heading's "¶" anchor links to its id, which the cleaning removes (an id of a submission's can clobber the page's).
c.HTMLExporter.exclude_anchor_links = True
