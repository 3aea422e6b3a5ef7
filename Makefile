# Course on PyTorch custom autograd Functions: notebooks, nbgrader course, grader.
# `make help` lists the targets. Every target that needs the environment creates it first.

SHELL      := /bin/bash
PYTHON     ?= python3
VENV       := .venv
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed
ASSIGNMENT := autograd
NBGRADER   := $(BIN)/nbgrader
# nbgrader runs `alembic` (from the venv) when it creates a gradebook.
export PATH := $(CURDIR)/$(BIN):$(PATH)

# make autograde JOBS=4 DB_URL=postgresql+psycopg://user@host/db: 4 nbgrader processes over disjoint groups of
# students, one PostgreSQL gradebook (docs/cluster.md, "Large classes"). Both are passed on as GRADER_JOBS /
# GRADER_DB_URL, which nbgrader_config.py also reads: set GRADER_DB_URL in your shell to use that gradebook for every
# command.
ifdef JOBS
export GRADER_JOBS := $(JOBS)
endif
ifdef DB_URL
export GRADER_DB_URL := $(DB_URL)
endif

.DEFAULT_GOAL := help
.PHONY: shared-env shared-server cluster-certificates help install system-packages sandbox-user release demo autograde roster due extension export formgrader feedback report scores lab test test-fast lock clean postgres postgres-stop

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

# Left out of the lock, which is installed without dependency resolution (--no-deps, then pip check): jsonschema's
# optional 'iri' format checker (an extra of jupyter-events' requirement), which compiles a Lark grammar when
# jsonschema is imported: 1.3 of the 1.5 s `import nbformat` took, in every nbgrader run. No validation here
# checks formats.
LEFT_OUT := rfc3987-syntax|rfc3987_syntax|lark

$(STAMP): requirements.lock pyproject.toml
	@echo "==> creating $(VENV) with the pinned dependencies (torch 2.13.0 CPU, nbgrader 0.9.6, ...)"
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11, 5) else "Python %d.%d.%d: 3.11.5 or newer is needed (requirements.lock: soupsieve 4.1.2 requires it; Debian 12 has 3.11.2); set PYTHON=<a newer python3>" % sys.version_info[:3])'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements.lock
	$(BIN)/python -m pip check
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	$(BIN)/python -m compileall -q grader
	$(BIN)/python -m grader.classroom.lab --write-settings
	@touch $(STAMP)

install: $(STAMP) system-packages sandbox-user ## create .venv with pinned dependencies, plus Debian's graphviz, bubblewrap, libseccomp, chromium, postgresql and the sandbox user

system-packages: ## install Debian's graphviz (torchviz's dot), bubblewrap and libseccomp2 (the grading sandbox), acl, gettext (translation catalogues), fonts-noto-cjk (Chinese in graphs and plots), chromium + chromium-driver (browser tests) and postgresql (gradebook for JOBS>1), when possible
	@missing=""; command -v dot >/dev/null || missing="$$missing graphviz"; command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	command -v setfacl >/dev/null || missing="$$missing acl"; ldconfig -p 2>/dev/null | grep -q libseccomp.so.2 || missing="$$missing libseccomp2"; \
	command -v msgmerge >/dev/null || missing="$$missing gettext"; \
	browser=""; command -v chromium >/dev/null || browser="$$browser chromium"; command -v chromedriver >/dev/null || browser="$$browser chromium-driver"; \
	font=""; fc-list 2>/dev/null | grep -q 'Noto Sans CJK' || font=" fonts-noto-cjk"; \
	pg=""; ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || pg="postgresql"; \
	if [ -n "$$pg" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq || true; \
	    echo "==> installing Debian's postgresql (a gradebook several nbgrader processes can share: make autograde JOBS=N)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
	      || echo "warning: apt-get could not install postgresql: tests/test_gradebook_postgres.py will be skipped; JOBS>1 needs a PostgreSQL server elsewhere (GRADER_DB_URL)"; \
	  else \
	    echo "note: Debian's postgresql is not installed (needs root and apt-get): tests/test_gradebook_postgres.py will be skipped;"; \
	    echo "      make autograde JOBS>1 needs a PostgreSQL server (GRADER_DB_URL). To install: sudo apt-get install postgresql"; \
	  fi; \
	fi; \
	if [ -z "$$missing$$browser$$font" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get update -qq || true; \
	  if [ -n "$$missing" ]; then \
	    echo "==> installing Debian packages:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null \
	      || echo "warning: apt-get could not install$$missing (graphs will be described, not drawn; no grading sandbox)"; \
	  fi; \
	  if [ -n "$$font" ]; then \
	    echo "==> installing Debian's fonts-noto-cjk (Chinese labels in graphs and plots, Chinese notebooks in the browser tests)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-noto-cjk >/dev/null \
	      || echo "warning: apt-get could not install fonts-noto-cjk: Chinese text in graphs and plots will show as empty boxes, and tests/test_graphs.py and tests/test_browser.py fail"; \
	  fi; \
	  if [ -n "$$browser" ]; then \
	    echo "==> installing Debian packages for the browser tests:$$browser"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$browser >/dev/null \
	      || echo "warning: apt-get could not install$$browser: the browser tests (tests/test_browser.py) will be skipped"; \
	  fi; \
	else \
	  echo "note: missing Debian packages:$$missing$$font$$browser (needs root and apt-get to install here)."; \
	  [ -z "$$missing" ] || echo "      Notebooks still run and say where a graph would be; grading needs bubblewrap."; \
	  [ -z "$$font" ] || echo "      Without fonts-noto-cjk, Chinese text in graphs and plots shows as empty boxes (tests/test_graphs.py fails)."; \
	  [ -z "$$browser" ] || echo "      Without chromium and chromium-driver the browser tests (tests/test_browser.py) are skipped."; \
	  echo "      To install: sudo apt-get install$$missing$$font$$browser"; \
	fi

sandbox-user: $(STAMP) system-packages ## as root: the unprivileged user student code runs as, allowed to reach the Python install
	@$(BIN)/python -m grader.isolation.sandbox setup

# One source: solutions/autograd/ (English). solutions/autograd-zh/ is generated from it and i18n/zh/*.po (an
# untranslated or fuzzy entry stops the release, saying what to do); nbgrader releases both into notebooks/.
release: $(STAMP) ## regenerate solutions/autograd-zh/ (from solutions/autograd/ + i18n/zh/) and the student notebooks notebooks/autograd{,-zh}/ with nbgrader
	@$(BIN)/python -m grader.classroom.release

demo: install ## the main job: autograde the bundled example class with nbgrader, print scores, write feedback
	@$(BIN)/python -m grader.classroom.course demo

autograde: $(STAMP) ## autograde submitted/ with nbgrader (gradebook created if missing), print the scores; FORCE=1 regrade all (make has no --force), STUDENT=erin regrade one (or a,b), ASSIGNMENT=autograd-zh for the Chinese notebooks, JOBS=N DB_URL=postgresql+psycopg://...: N processes
	@$(BIN)/python -m grader.classroom.course autograde --assignment '$(ASSIGNMENT)' $(if $(filter 1 yes true,$(FORCE)),--force) $(if $(STUDENT),--student '$(STUDENT)')

roster: $(STAMP) ## the class list into the gradebook's student table: CSV=students.csv (nbgrader's, Moodle's or Canvas's columns); make scores then lists every enrolled student
	@$(BIN)/python -m grader.classroom.course roster --csv '$(CSV)'

due: $(STAMP) ## the assignment's due date: DUE="2026-12-01 23:59 +08:00" (ASSIGNMENT=autograd; autograd-zh follows it; DUE=none removes it), into deadlines.toml and the gradebook
	@$(BIN)/python -m grader.classroom.course due --assignment '$(ASSIGNMENT)' --due '$(DUE)'

extension: $(STAMP) ## one student's extension: STUDENT=erin EXTENSION="2 days" (EXTENSION=0 removes it); graded work gets its new late penalty at once
	@$(BIN)/python -m grader.classroom.course extension --assignment '$(ASSIGNMENT)' --student '$(STUDENT)' --extension '$(EXTENSION)'

export: $(STAMP) ## the grades for the LMS, one row per enrolled student: exports/grades.csv, canvas.csv (Canvas's Gradebook import) and moodle.csv (Moodle's CSV grade import)
	@$(BIN)/python -m grader.classroom.course export

POSTGRES_DIR ?= .postgres
postgres: $(STAMP) ## start a local PostgreSQL gradebook in .postgres/ (for trying JOBS=N) and print its GRADER_DB_URL
	@$(BIN)/python -m grader.classroom.postgres start --dir $(POSTGRES_DIR)

postgres-stop: $(STAMP) ## stop the local PostgreSQL of make postgres
	@$(BIN)/python -m grader.classroom.postgres stop --dir $(POSTGRES_DIR)

feedback: $(STAMP) ## write feedback/<student>/autograd/*.html for every autograded submission (a progress line; nbgrader's log: nbgrader.log); ASSIGNMENT=autograd-zh; FORCE=1 writes again the pages written before
	@$(BIN)/python -m grader.classroom.course feedback --assignment '$(ASSIGNMENT)' $(if $(filter 1 yes true,$(FORCE)),--force)

report: $(STAMP) ## write reports/class-report.html (+ CSVs): score distributions and the class's most frequent mistakes, every assignment (autograd, autograd-zh), each student's language shown; ASSIGNMENT=autograd-zh: only that one
	@$(BIN)/python -m grader.classroom.report $(if $(filter command line,$(origin ASSIGNMENT)),--assignment '$(ASSIGNMENT)')

scores: $(STAMP) ## print scores per student and exercise from the gradebook (gradebook.db, or GRADER_DB_URL)
	@$(BIN)/python -m grader.classroom.course scores

# A shared teaching server (docs/shared-server.md): nbgrader's file-system exchange. PREFIX: the students'
# read-only environment; EXCHANGE: nbgrader's exchange folder (its default); COURSE: the course folder to make private;
# GROUP: the students' Unix group, let through to a Python they could not reach (pyenv's under /root).
PREFIX   ?= /opt/autograd-course
EXCHANGE ?= /srv/nbgrader/exchange
COURSE   ?= .

shared-env: $(STAMP) ## as root: the students' read-only environment (grader, nbgrader set to this course and EXCHANGE) in PREFIX=/opt/autograd-course
	@$(BIN)/python -m grader.classroom.shared env --prefix $(PREFIX) --exchange $(EXCHANGE) --python $(PYTHON) $(if $(GROUP),--group $(GROUP))

shared-server: $(STAMP) ## as the instructor: the course private (root 711, instructor folders 700, gradebook 600) and the exchange EXCHANGE=/srv/nbgrader/exchange created
	@$(BIN)/python -m grader.classroom.shared server --course $(COURSE) --exchange $(EXCHANGE)


# As root too (--allow-root only then). Serves the course root (nbgrader's extension needs the course inside it) and
# opens work/$(ASSIGNMENT)/, a working copy made from notebooks/ (only missing notebooks are copied; git ignores it).
lab: $(STAMP) system-packages ## JupyterLab on your working copy work/autograd/ of the student notebooks (PORT=N, NO_BROWSER=1)
	@$(BIN)/python -m grader.classroom.lab --assignment $(ASSIGNMENT) $(if $(PORT),--port $(PORT)) $(if $(NO_BROWSER),--no-browser)

formgrader: $(STAMP) system-packages ## nbgrader's formgrader on the course, in JupyterLab's server (PORT=N, NO_BROWSER=1): manual grading, the gradebook, students' names from make roster
	@$(BIN)/python -m grader.classroom.lab --formgrader $(if $(PORT),--port $(PORT)) $(if $(NO_BROWSER),--no-browser)

# Test files run in TEST_JOBS processes (pytest-xdist, one file per process at a time: a file's module fixtures, such
# as a graded class or a Dask cluster, are built once). Most tests wait on sandboxes and servers: two processes keep
# 2 cores busy (29 -> 16-17 minutes on 25 Nov's VM). TEST_JOBS=0 runs them in this one process.
TEST_JOBS ?= 2

test: install ## run the whole test suite (slow end-to-end tests included), in TEST_JOBS=2 processes
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder --durations=15

test-fast: $(STAMP) ## run the tests that take seconds (skips kernels and nbgrader)
	$(BIN)/python -m pytest -m "not slow"

cluster-certificates: $(STAMP) ## the Dask cluster's TLS CA and certificates, in cluster-tls/ (HOST=grading-host)
	$(BIN)/python -m grader.isolation.cluster certificates $(if $(HOST),--host $(HOST))

lock: $(STAMP) ## rewrite requirements.lock from the current environment
	$(BIN)/python -m pip freeze --all --exclude-editable | grep -v '^pip==' | sed 's/^torch==\(.*\)+cpu$$/torch==\1/' \
		| grep -v -E '^($(LEFT_OUT))==' > requirements.lock.new
	@{ grep '^#' requirements.lock; cat requirements.lock.new; } > requirements.lock.tmp && mv requirements.lock.tmp requirements.lock && rm requirements.lock.new

clean: ## remove generated working files (keeps .venv and your gradebook)
	rm -rf .demo .pytest_cache build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
