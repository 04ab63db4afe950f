from rest_framework.routers import DefaultRouter

from questions.api import PracticeAnswerViewSet, QuestionViewSet, TopicViewSet

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("topics", TopicViewSet, basename="topic")
router.register("questions", QuestionViewSet, basename="question")
router.register("practice-answers", PracticeAnswerViewSet, basename="practice-answer")
urlpatterns = router.urls
